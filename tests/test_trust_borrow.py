"""Nobody borrows trust (issue 22): a clone's links never borrow another project's trust.

Trust belongs to the root that uses a .contextrc (where it is, with the bytes read
through it), never to the file a symlink points at; the file is read once and those
bytes are both hashed and applied; a project-local context directory that a link
takes out of the project, or that another user owns, is not used.
"""

import json
import os
import sys

import pytest

from ctxd import paths
from ctxd.activation import planner, trust
from ctxd.activation.fileio import atomic_write, sha256_hex
from ctxdtest import ctxd

GOOD = '[hooks]\non_enter = "touch ./entered"\n[path]\nprepend = ["bin"]\n[env]\nBORROW = "yes"\n'


def no_trusted_trees(home):
    (home / ".config/ctxd/config.toml").write_text("")  # only what `ctxd allow` says counts


def allow(rc):
    trust.allow(str(rc), sha256_hex(rc.read_bytes()))


def build(root, home):
    env = {"HOME": str(home), "PATH": "/usr/bin"}
    return planner.build(str(root), env, env)


def sets(plan):
    return {n: v for n, v, _s, _o in plan.sets}


def project(path, rc_link=None):
    """A python project with its own .venv/bin and bin/ (and a .contextrc link to *rc_link*)."""
    (path / ".venv/bin").mkdir(parents=True)
    (path / ".venv/bin/activate").write_text("")
    (path / "bin").mkdir()
    (path / "pyproject.toml").write_text("")
    if rc_link:
        (path / ".contextrc").symlink_to(rc_link)
    return path


def assert_borrows_nothing(plan, evil):
    evil = str(evil)
    assert plan.on_enter == []
    assert not plan.trusted
    assert "BORROW" not in sets(plan) and "VIRTUAL_ENV" not in sets(plan)
    assert not [e for e, _ in plan.prepend if e.startswith(evil)]
    assert (f"{evil}/.contextrc", trust.UNTRUSTED, None) in plan.files
    assert plan.status.endswith("!blocked")


def test_link_to_an_allowed_sibling_borrows_nothing(tmp_path, isolated_paths):
    no_trusted_trees(isolated_paths)
    (tmp_path / "good").mkdir()
    (tmp_path / "good/.contextrc").write_text(GOOD)
    allow(tmp_path / "good/.contextrc")
    evil = project(tmp_path / "evil", "../good/.contextrc")
    plan = build(evil, isolated_paths)
    assert_borrows_nothing(plan, evil)
    assert [w for w in plan.warnings if ".contextrc" in w] == [
        f"ctxd: {evil}/.contextrc is a symlink to {tmp_path}/good/.contextrc and is not trusted here, so nothing "
        f"in it applies (trust is per directory, never borrowed from the file a link points at). Review it, "
        f"then run: ctxd allow {evil}"]
    # the file it points at keeps its own trust where it is
    assert sets(build(tmp_path / "good", isolated_paths))["BORROW"] == "yes"


def test_link_to_the_allowed_home_contextrc_borrows_nothing(isolated_paths):
    home = isolated_paths
    no_trusted_trees(home)
    (home / ".contextrc").write_text('[path]\nprepend = ["bin"]\n')
    allow(home / ".contextrc")
    (home / "src").mkdir()
    evil = project(home / "src/evil", "../../.contextrc")
    plan = build(evil, home)
    assert_borrows_nothing(plan, evil)
    # ~/.contextrc itself still layers onto every project under ~, as before
    assert (str(home / ".contextrc"), trust.ALLOWED, None) in plan.files
    assert [e for e, _ in plan.prepend] == [str(home / "bin")]


def test_allow_trusts_a_linked_contextrc_in_its_own_root_only(tmp_path, isolated_paths):
    """`ctxd allow DIR` for a root whose .contextrc is a link (a dotfiles checkout):
    trusted there with the content read through it; an edit of the target blocks it."""
    no_trusted_trees(isolated_paths)
    (tmp_path / "dotfiles").mkdir()
    (tmp_path / "dotfiles/contextrc").write_text(GOOD)
    mine = project(tmp_path / "mine", "../dotfiles/contextrc")
    other = project(tmp_path / "other", "../dotfiles/contextrc")
    r = ctxd("allow", str(mine), script=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout == (f"ctxd: allowed {mine}/.contextrc (a symlink to {tmp_path}/dotfiles/contextrc; "
                        f"trusted here only, with its content now)\n")
    plan = build(mine, isolated_paths)
    assert plan.trusted and sets(plan)["BORROW"] == "yes" and plan.on_enter == ["touch ./entered"]
    assert str(mine / "bin") in [e for e, _ in plan.prepend]
    assert_borrows_nothing(build(other, isolated_paths), other)  # the same target, another root
    assert trust.file_status(str(tmp_path / "dotfiles/contextrc"), sha256_hex(GOOD.encode())) == trust.UNTRUSTED
    (tmp_path / "dotfiles/contextrc").write_text(GOOD + 'X = "1"\n')
    assert (str(mine / ".contextrc"), trust.CHANGED, None) in build(mine, isolated_paths).files


def test_allow_records_of_regular_files_keep_their_key(tmp_path):
    """A record written before (keyed by the real path of the file) still counts for a
    .contextrc that is a regular file: nobody re-allows after the upgrade."""
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")  # a symlinked directory on the way is fine
    rc = tmp_path / "real/.contextrc"
    rc.write_text(GOOD)
    sha = sha256_hex(rc.read_bytes())
    old_key = sha256_hex(os.path.realpath(rc))
    atomic_write(os.path.join(paths.trust_dir(), "allow", old_key), f"file {sha}\n{os.path.realpath(rc)}\n")
    assert trust.file_status(str(rc), sha) == trust.ALLOWED
    assert trust.file_status(str(tmp_path / "link/.contextrc"), sha) == trust.ALLOWED


def test_deny_of_a_linked_contextrc_is_for_that_root(tmp_path):
    (tmp_path / "good").mkdir()
    (tmp_path / "good/.contextrc").write_text(GOOD)
    allow(tmp_path / "good/.contextrc")
    (tmp_path / "evil").mkdir()
    (tmp_path / "evil/.contextrc").symlink_to("../good/.contextrc")
    trust.deny(str(tmp_path / "evil/.contextrc"))
    sha = sha256_hex(GOOD.encode())
    assert trust.file_status(str(tmp_path / "evil/.contextrc"), sha) == trust.DENIED
    assert trust.file_status(str(tmp_path / "good/.contextrc"), sha) == trust.ALLOWED


def test_show_does_not_say_allowed(tmp_path, isolated_paths):
    no_trusted_trees(isolated_paths)
    (tmp_path / "good").mkdir()
    (tmp_path / "good/.contextrc").write_text(GOOD)
    assert ctxd("allow", str(tmp_path / "good"), script=True).returncode == 0
    evil = project(tmp_path / "evil", "../good/.contextrc")
    r = ctxd("show", cwd=evil, script=True)
    assert r.returncode == 0, r.stderr
    assert f"contextrc    {evil}/.contextrc  [untrusted]" in r.stdout
    assert "[allowed]" not in r.stdout and "hook         on_enter" not in r.stdout
    assert "root trusted no" in r.stdout
    info = json.loads(ctxd("show", "--json", str(evil), script=True).stdout)
    assert info["files"] == [{"path": f"{evil}/.contextrc", "status": "untrusted", "error": None}]
    assert not info["trusted"] and info["hooks"]["on_enter"] == []


# -- [env] files ---------------------------------------------------------------------------

def test_env_file_linked_out_of_the_project_is_not_loaded(tmp_path, isolated_paths):
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets/.env").write_text("SECRET=from-elsewhere\n")
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / ".contextrc").write_text('[env]\nfiles = [".env", "conf/local.env", "../shared.env"]\n')
    (proj / ".env").symlink_to("../secrets/.env")
    (proj / "conf").symlink_to("../secrets")  # a directory on the way counts too
    (tmp_path / "secrets/local.env").write_text("ALSO=from-elsewhere\n")
    (tmp_path / "shared.env").write_text("SHARED=written-out-in-the-reviewed-file\n")
    (proj / "inside.env").write_text("INSIDE=1\n")
    allow(proj / ".contextrc")
    plan = build(proj, isolated_paths)
    got = sets(plan)
    assert "SECRET" not in got and "ALSO" not in got
    assert got["SHARED"] == "written-out-in-the-reviewed-file"  # an entry that says so itself
    assert f"ctxd: {proj}/.env is a symlink out of {proj} (to {tmp_path}/secrets/.env), so it is not loaded " \
           f"(an [env] files entry never reads outside its project through a link)" in plan.warnings
    assert any(w.startswith(f"ctxd: {proj}/conf/local.env is a symlink out of") for w in plan.warnings)
    assert str(proj / ".env") in plan.watch  # watched: replacing the link with a file applies it
    # a link that stays inside the project is an ordinary file
    (proj / ".env").unlink()
    (proj / ".env").symlink_to("inside.env")
    assert sets(build(proj, isolated_paths))["INSIDE"] == "1"


# -- one read: the bytes hashed are the bytes applied -----------------------------------------

_AUDIT = {"on": None}


def _audit(event, args):
    spy = _AUDIT["on"]
    if spy is not None and event == "open":
        spy(args[0])


sys.addaudithook(_audit)  # audit hooks cannot be removed; this one acts only while a test sets "on"


def test_planner_reads_each_contextrc_once(tmp_path):
    (tmp_path / ".contextrc").write_text('[env]\nA = "1"\n')
    (tmp_path / "child").mkdir()
    (tmp_path / "child/.contextrc").write_text('[env]\nB = "2"\n')
    for rc in (tmp_path / ".contextrc", tmp_path / "child/.contextrc"):
        allow(rc)
    opened = []
    _AUDIT["on"] = lambda p: opened.append(os.fsdecode(p)) if isinstance(p, (str, bytes)) else None
    try:
        plan = build(tmp_path / "child", tmp_path)
    finally:
        _AUDIT["on"] = None
    assert sets(plan)["A"] == "1" and sets(plan)["B"] == "2"
    for rc in (tmp_path / ".contextrc", tmp_path / "child/.contextrc"):
        assert opened.count(str(rc)) == 1, opened


def test_contextrc_swapped_after_the_trusted_read_applies_nothing_of_it(tmp_path):
    """The attack of a file swapped between the hash read and the parse read, made
    deterministic: the swap happens the moment the file is opened a second time."""
    rc = tmp_path / ".contextrc"
    rc.write_text('[env]\nA = "trusted"\n')
    allow(rc)
    evil = b'[env]\nA = "evil"\n[hooks]\non_enter = "touch pwned"\n'
    seen = {"n": 0}

    def swap(p):
        if isinstance(p, (str, bytes)) and os.fsdecode(p) == str(rc):
            seen["n"] += 1
            if seen["n"] == 2:
                _AUDIT["on"] = None
                rc.write_bytes(evil)

    _AUDIT["on"] = swap
    try:
        plan = build(tmp_path, tmp_path)
    finally:
        _AUDIT["on"] = None
    assert sets(plan)["A"] == "trusted"
    assert plan.on_enter == []


# -- [context] store = "project" ---------------------------------------------------------------

def _store_project(proj):
    proj.mkdir(exist_ok=True)
    (proj / ".contextrc").write_text('[context]\nstore = "project"\n')
    allow(proj / ".contextrc")


def test_project_store_linked_out_of_the_project_is_refused(tmp_path, isolated_paths):
    proj = tmp_path / "proj"
    _store_project(proj)
    (tmp_path / "elsewhere").mkdir()
    (proj / ".ctxd").symlink_to("../elsewhere")
    plan = build(proj, isolated_paths)
    fallback = paths.context_dir(str(proj))
    assert sets(plan)["CTXD_CONTEXT_DIR"] == fallback
    assert [w for w in plan.warnings if ".ctxd" in w] == [
        f"ctxd: {proj}/.ctxd is a symlink out of the project (to {tmp_path}/elsewhere), so the conversation "
        f"store is not kept there (it stays in {fallback}); remove it, and ctxd creates its own"]
    # the real store, written by the real command, does not land in the link's target
    r = ctxd("chat", "add", "hello", cwd=proj, script=True)
    assert r.returncode == 0, r.stderr
    assert os.listdir(tmp_path / "elsewhere") == []
    assert os.path.exists(os.path.join(fallback, "store.db"))
    # a link that stays inside the project is the user's own layout
    (proj / ".ctxd").unlink()
    (proj / "state").mkdir()
    (proj / ".ctxd").symlink_to("state")
    assert sets(build(proj, isolated_paths))["CTXD_CONTEXT_DIR"] == str(proj / ".ctxd")


@pytest.mark.skipif(os.getuid() != 0, reason="giving a directory to another user needs root")
def test_project_store_owned_by_another_user_is_refused(tmp_path, isolated_paths):
    proj = tmp_path / "proj"
    _store_project(proj)
    (proj / ".ctxd").mkdir()
    os.chown(proj / ".ctxd", 54321, 54321)
    plan = build(proj, isolated_paths)
    assert sets(plan)["CTXD_CONTEXT_DIR"] == paths.context_dir(str(proj))
    assert any(w.startswith(f"ctxd: {proj}/.ctxd belongs to another user (uid 54321), so the conversation store "
                            f"is not kept there") for w in plan.warnings)
    os.chown(proj / ".ctxd", os.getuid(), os.getgid())
    assert sets(build(proj, isolated_paths))["CTXD_CONTEXT_DIR"] == str(proj / ".ctxd")


# -- files ctxd chat install writes in the project ---------------------------------------------

def _install(*args, cwd):
    return ctxd("chat", "install", *args, cwd=cwd, script=True)


@pytest.mark.parametrize("uninstall", [False, True])
def test_chat_install_refuses_a_context_file_linked_out_of_the_project(tmp_path, uninstall):
    proj = tmp_path / "proj"
    (proj / ".git").mkdir(parents=True)
    victim = tmp_path / "victim" / "CLAUDE.md"
    victim.parent.mkdir()
    victim.write_text("someone else's file\n<!-- ctxd:begin created sep=0 -->\n<!-- ctxd:end -->\n")
    (proj / "CLAUDE.md").symlink_to(victim)
    before = victim.read_bytes()
    r = _install("claude-md", *(["--uninstall"] if uninstall else []), cwd=proj)
    assert r.returncode == 5, (r.stdout, r.stderr)
    assert r.stderr == (f"ctxd: {proj}/CLAUDE.md is a symlink out of the project (to {victim}); not writing "
                        f"through it (remove the link, then run this again)\n")
    assert victim.read_bytes() == before and (proj / "CLAUDE.md").is_symlink()
    assert sorted(os.listdir(victim.parent)) == ["CLAUDE.md"]


@pytest.mark.parametrize("args,link", [
    ((), ".claude/settings.local.json"),
    (("--shared",), ".claude/settings.json"),
    ((), ".claude"),  # a directory link on the way
    (("--uninstall",), ".claude/settings.local.json"),
])
def test_chat_install_refuses_settings_linked_out_of_the_project(tmp_path, isolated_paths, args, link):
    proj = tmp_path / "proj"
    (proj / ".git").mkdir(parents=True)
    user = isolated_paths / ".claude"
    user.mkdir(exist_ok=True)
    (user / "settings.json").write_text('{"theme": "dark"}\n')
    (user / "settings.local.json").write_text('{"hooks": {"Stop": [{"hooks": [{"type": "command", '
                                              '"command": "ctxd chat hook claude"}]}]}}\n')
    before = {p.name: p.read_bytes() for p in user.iterdir()}
    (proj / ".claude").mkdir(exist_ok=True) if link != ".claude" else None
    (proj / link).symlink_to(user / os.path.basename(link) if link != ".claude" else user)
    r = _install("claude", *args, cwd=proj)
    assert r.returncode == 5, (r.stdout, r.stderr)
    assert len(r.stderr.splitlines()) == 1 and "is a symlink out of the project" in r.stderr
    assert {p.name: p.read_bytes() for p in user.iterdir()} == before


def test_chat_install_writes_through_a_link_inside_the_project(tmp_path):
    proj = tmp_path / "proj"
    (proj / ".git").mkdir(parents=True)
    (proj / "docs").mkdir()
    (proj / "docs/CLAUDE.md").write_text("# Ours\n")
    (proj / "CLAUDE.md").symlink_to("docs/CLAUDE.md")
    r = _install("claude-md", cwd=proj)
    assert r.returncode == 0, r.stderr
    assert "<!-- ctxd:begin" in (proj / "docs/CLAUDE.md").read_text() and (proj / "CLAUDE.md").is_symlink()


# -- [context] system_file ---------------------------------------------------------------------

def _context(cwd):
    return ctxd("context", "--budget", "2000", cwd=cwd, script=True)


def test_system_file_linked_out_of_the_project_is_not_read(tmp_path):
    proj = tmp_path / "proj"
    (proj / ".git").mkdir(parents=True)
    (proj / "docs").mkdir()
    (proj / ".contextrc").write_text('[context]\nsystem_file = "docs/ai.md"\n')
    allow(proj / ".contextrc")
    secret = tmp_path / "elsewhere" / "notes.md"
    secret.parent.mkdir()
    secret.write_text("PRIVATE-NOTES-FROM-ELSEWHERE\n")
    (proj / "docs" / "ai.md").symlink_to(secret)
    ctxd("chat", "add", "hello", cwd=proj, script=True, check=0)
    r = _context(proj)
    assert r.returncode == 5, (r.stdout, r.stderr)
    assert "PRIVATE-NOTES" not in r.stdout + r.stderr
    assert r.stderr == (f"ctxd: [context] system_file {proj}/docs/ai.md is a symlink out of the project "
                        f"(to {secret}); not reading it\n")
    (proj / "docs" / "ai.md").unlink()
    (proj / "docs" / "ai.md").write_text("Project rules: use tabs.\n")
    r = _context(proj)
    assert r.returncode == 0 and "Project rules: use tabs." in r.stdout, (r.stdout, r.stderr)
