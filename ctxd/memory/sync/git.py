"""git plumbing for ctxd sync (ctxd.memory.sync.sharing): run with a timeout and an explicit environment
that no GIT_* variable of the caller redirects to another repository.
"""

import getpass
import os
import socket
import subprocess
import sys

from ctxd.errors import NotFoundError, SyncError

GIT_TIMEOUT = 60  # seconds for local plumbing
NET_TIMEOUT = 300  # seconds for fetch and push
# git variables that point git at another repository, index or object store: never inherited
_REDIRECTING = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR",
                "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_PREFIX", "GIT_CEILING_DIRECTORIES",
                "GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_QUARANTINE_PATH", "GIT_REPLACE_REF_BASE",
                "GIT_SHALLOW_FILE", "GIT_GRAFT_FILE", "GIT_NO_REPLACE_OBJECTS")


class Git:
    """git plumbing for one repository (its common git dir: worktrees share the ref)."""

    def __init__(self, root, environ=None):
        self.root = root
        env = {k: v for k, v in (os.environ if environ is None else environ).items() if k not in _REDIRECTING}
        env.update(LC_ALL="C", LANGUAGE="C", GIT_OPTIONAL_LOCKS="0")
        if not (sys.stdin is not None and sys.stdin.isatty()):
            env["GIT_TERMINAL_PROMPT"] = "0"  # a credential prompt nobody can answer would hang
        self.env = env
        try:
            p = subprocess.run(["git", "-C", root, "rev-parse", "--path-format=absolute", "--git-common-dir",
                                "--is-shallow-repository", "--is-bare-repository"], capture_output=True,
                               env=env, timeout=GIT_TIMEOUT)
        except FileNotFoundError:
            raise NotFoundError("git is not installed (ctxd sync shares memory through git)") from None
        except subprocess.TimeoutExpired:
            raise SyncError(f"git rev-parse timed out after {GIT_TIMEOUT} s in {root}") from None
        if p.returncode != 0:
            raise NotFoundError(f"{root} is not in a git repository (ctxd sync shares memory through the "
                                f"project's git remotes: git init && git remote add origin URL)")
        common, shallow, _bare = p.stdout.decode().splitlines()[:3]
        self.git_dir = common
        self.shallow = shallow.strip() == "true"
        self.env["GIT_DIR"] = common

    def run(self, *args, input=None, timeout=GIT_TIMEOUT, check=True):
        """git *args* in the repository; (returncode, stdout bytes, stderr text)."""
        try:
            p = subprocess.run(["git", *args], input=input, capture_output=True, env=self.env, timeout=timeout,
                               cwd=self.root)
        except subprocess.TimeoutExpired:
            raise SyncError(f"git {args[0]} timed out after {timeout} s") from None
        err = p.stderr.decode("utf-8", "replace")
        if check and p.returncode != 0:
            raise SyncError(f"git {args[0]} failed: {last_line(err) or f'exit status {p.returncode}'}")
        return p.returncode, p.stdout, err

    def out(self, *args, **kw):
        return self.run(*args, **kw)[1].decode("utf-8", "replace").strip()

    def rev(self, ref):
        rc, out, _ = self.run("rev-parse", "--verify", "-q", ref + "^{commit}", check=False)
        return out.decode().strip() if rc == 0 else None

    def config(self, key):
        rc, out, _ = self.run("config", "--get", key, check=False)
        return out.decode("utf-8", "replace").strip() if rc == 0 else None

    def remotes(self):
        return [r for r in self.out("remote").splitlines() if r]

    def remote_url(self, remote):
        return self.config(f"remote.{remote}.url")

    def identity(self):
        """(name, email): git's user.name / user.email, else the login at this host."""
        email = self.config("user.email") or f"{getpass.getuser()}@{socket.gethostname()}"
        name = self.config("user.name") or email.split("@")[0]
        return name, email

    def hash_blob(self, data):
        return self.out("hash-object", "-w", "--stdin", input=data)

    def ls_tree(self, commit):
        """{path: blob oid} of every file in *commit*'s tree."""
        out = self.run("ls-tree", "-r", "-z", "--full-tree", commit)[1]
        entries = {}
        for rec in out.split(b"\0"):
            if not rec:
                continue
            meta, _, path = rec.partition(b"\t")
            parts = meta.split()
            if len(parts) == 3 and parts[1] == b"blob":
                entries[path.decode("utf-8", "surrogateescape")] = parts[2].decode()
        return entries

    def mktree(self, entries):
        """The tree oid holding *entries* ({path: blob oid}), directories made as needed."""
        root = {}
        for path, oid in entries.items():
            node = root
            *dirs, name = path.split("/")
            for d in dirs:
                node = node.setdefault(d, {})
            node[name] = oid
        return self._mktree(root)

    def _mktree(self, node):
        recs = []
        for name in sorted(node):
            v = node[name]
            if isinstance(v, dict):
                recs.append(f"040000 tree {self._mktree(v)}\t{name}")
            else:
                recs.append(f"100644 blob {v}\t{name}")
        data = "".join(r + "\0" for r in recs).encode("utf-8", "surrogateescape")
        return self.out("mktree", "-z", input=data)

    def commit_tree(self, tree, parents, message):
        name, email = self.identity()
        env = dict(GIT_AUTHOR_NAME=name, GIT_AUTHOR_EMAIL=email, GIT_COMMITTER_NAME=name,
                   GIT_COMMITTER_EMAIL=email)
        args = ["commit-tree", tree]
        for p in parents:
            args += ["-p", p]
        saved = self.env
        self.env = dict(saved, **env)
        try:
            return self.out(*args, "-m", message)
        finally:
            self.env = saved

    def update_ref(self, ref, new, old):
        """Move *ref* to *new* if it is still at *old* (None: if it does not exist). Whether it moved."""
        rc, _, _ = self.run("update-ref", "-m", "ctxd sync", ref, new, old or "", check=False)
        return rc == 0

    def is_ancestor(self, a, b):
        rc, _, err = self.run("merge-base", "--is-ancestor", a, b, check=False)
        if rc not in (0, 1):
            raise SyncError(f"git merge-base failed: {last_line(err)}")
        return rc == 0

    def cat_blobs(self, oids):
        """{oid: bytes or None (not a blob / missing)} through one git cat-file --batch."""
        if not oids:
            return {}
        out = self.run("cat-file", "--batch", input="".join(o + "\n" for o in oids).encode(),
                       timeout=NET_TIMEOUT)[1]
        res, pos = {}, 0
        for oid in oids:
            nl = out.index(b"\n", pos)
            head = out[pos:nl].decode().split()
            pos = nl + 1
            if len(head) == 2 and head[1] == "missing":
                res[oid] = None
                continue
            size = int(head[2])
            res[oid] = out[pos:pos + size] if head[1] == "blob" else None
            pos += size + 1
        return res

    def blob_sizes(self, oids):
        """{oid: size in bytes} of the blobs among *oids* (git cat-file --batch-check: nothing read)."""
        if not oids:
            return {}
        out = self.run("cat-file", "--batch-check", input="".join(o + "\n" for o in oids).encode())[1]
        res = {}
        for line in out.decode().splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] == "blob":
                res[parts[0]] = int(parts[2])
        return res

    def adders(self, commit):
        """{segment path: the author emails (lowercase) of the commits that added it}, over the
        history of *commit* (a merge adds nothing of its own: it only unites two trees)."""
        out = self.out("-c", "core.quotePath=false", "log", "--full-history", "--no-renames", "--diff-filter=A",
                       "--format=%x01%ae", "--name-only", commit, "--", "segments/", timeout=NET_TIMEOUT)
        res, email = {}, None
        for line in out.splitlines():
            if line.startswith("\x01"):
                email = line[1:].strip().lower()
            elif line.strip() and email is not None:
                res.setdefault(line.strip(), set()).add(email)
        return res

    def count_between(self, a, b):
        """(commits only in *a*, commits only in *b*)."""
        left, right = self.out("rev-list", "--left-right", "--count", f"{a}...{b}").split()
        return int(left), int(right)


def last_line(text):
    lines = [l.strip() for l in text.splitlines() if l.strip() and not l.startswith("hint:")]
    return lines[-1] if lines else ""


def tracking_ref(remote):
    return f"refs/ctxd/remotes/{remote}/memory"
