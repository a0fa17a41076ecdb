"""Trust: which .contextrc files may apply, which project roots may touch PATH.

Stored under the data directory as one small file per path (cheap to test on
the hot path, atomic to change, visible to every terminal at its next prompt):

    trust/allow/<sha256(name)>   "file <sha256 of content>\\n<name>\\n" or "dir\\n<name>\\n"
    trust/deny/<sha256(name)>    "<name>\\n"   (survives edits of the file)

A file is allowed only while its content hash matches the one allowed: any
edit blocks it again until ``ctxd allow``. A deny wins over everything.

The name a record is keyed by: a project directory's real path; a .contextrc's
real directory joined with its own name, the last component never resolved.
So a .contextrc that is a symlink is trusted where it is (the root that uses
it, with the bytes read through it), never by the file it points at: a clone
whose .contextrc links to a file you allowed elsewhere borrows nothing. For a
regular file the name equals its real path, the key of older records.
"""

import os

from ctxd import paths
from ctxd.activation.fileio import atomic_write, sha256_hex

ALLOWED, DENIED, UNTRUSTED, CHANGED = "allowed", "denied", "untrusted", "changed"


def _key(path):
    return sha256_hex(os.path.realpath(path))


def rc_name(path):
    """The name a .contextrc's trust is recorded under: the real path of the directory
    holding it joined with its own name (a symlink there is not followed)."""
    head, name = os.path.split(os.path.abspath(path))
    return os.path.join(os.path.realpath(head), name)


def _rc_key(path):
    return sha256_hex(rc_name(path))


def allow_file(path, environ=None):
    """The allow record of the project directory *path*."""
    return os.path.join(paths.trust_dir(environ), "allow", _key(path))


def deny_file(path, environ=None):
    """The deny record of the project directory *path*."""
    return os.path.join(paths.trust_dir(environ), "deny", _key(path))


def rc_files(path, environ=None):
    """(allow record, deny record) of the .contextrc at *path* (see rc_name)."""
    d, key = paths.trust_dir(environ), _rc_key(path)
    return os.path.join(d, "allow", key), os.path.join(d, "deny", key)


def _read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def file_status(path, content_sha, environ=None):
    """Trust of the .contextrc at *path* whose bytes hash to *content_sha*."""
    allow_path, deny_path = rc_files(path, environ)
    if os.path.exists(deny_path):
        return DENIED
    record = _read(allow_path)
    if record is None:
        return UNTRUSTED
    first = record.split("\n", 1)[0]
    if first == f"file {content_sha}":
        return ALLOWED
    return CHANGED


def is_denied(path, environ=None):
    return os.path.exists(deny_file(path, environ))


def dir_allowed(path, environ=None):
    if os.path.exists(deny_file(path, environ)):
        return False
    return allows_dir(allow_file(path, environ))


def allows_dir(allow_path):
    """Whether the allow file *allow_path* trusts a directory (see allow())."""
    record = _read(allow_path)
    return record is not None and record.startswith("dir\n")


def root_files(path, environ=None):
    """(allow_file(path), deny_file(path)) with one realpath and one hash for both."""
    d, key = paths.trust_dir(environ), _key(path)
    return os.path.join(d, "allow", key), os.path.join(d, "deny", key)


def under_trusted_tree(root, trees):
    """True when *root* lies in one of *trees* and belongs to this user."""
    if not trees:
        return False
    real = os.path.realpath(root)
    for t in trees:
        t = os.path.realpath(os.path.expanduser(t))
        if real == t or real.startswith(t.rstrip("/") + "/"):
            try:
                return os.stat(real).st_uid == os.getuid()
            except OSError:
                return False
    return False


def _records(path, is_rc, environ):
    """(name, allow record, deny record) of a .contextrc (*is_rc*) or a directory."""
    if is_rc:
        return (rc_name(path),) + rc_files(path, environ)
    return os.path.realpath(path), allow_file(path, environ), deny_file(path, environ)


def allow(path, content_sha=None, environ=None):
    """Trust a .contextrc (with its content hash) or, without one, a directory."""
    name, allow_path, deny_path = _records(path, bool(content_sha), environ)
    try:
        os.unlink(deny_path)
    except FileNotFoundError:
        pass
    body = f"file {content_sha}\n{name}\n" if content_sha else f"dir\n{name}\n"
    atomic_write(allow_path, body)


def deny(path, environ=None):
    """Block a .contextrc or a directory (whichever *path* is) until allowed again."""
    name, allow_path, deny_path = _records(path, not os.path.isdir(path), environ)
    atomic_write(deny_path, f"{name}\n")
    try:
        os.unlink(allow_path)
    except FileNotFoundError:
        pass


def tree_dir(environ=None):
    return os.path.join(paths.trust_dir(environ), "tree")


def trees(environ=None):
    """Trees trusted with `ctxd allow --tree` (config.toml [trust] roots adds more)."""
    d = tree_dir(environ)
    out = []
    try:
        entries = os.listdir(d)
    except OSError:
        return out
    for name in entries:
        if name.startswith("."):
            continue
        record = _read(os.path.join(d, name))
        if record:
            out.append(record.strip("\n"))
    return out


def add_tree(path, environ=None):
    real = os.path.realpath(path)
    atomic_write(os.path.join(tree_dir(environ), sha256_hex(real)), f"{real}\n")


def remove_tree(path, environ=None):
    try:
        os.unlink(os.path.join(tree_dir(environ), sha256_hex(os.path.realpath(path))))
        return True
    except FileNotFoundError:
        return False


def revoke(path, environ=None):
    for f in _records(path, not os.path.isdir(path), environ)[1:]:
        try:
            os.unlink(f)
        except FileNotFoundError:
            pass
