"""The part of ``os`` that ``ctxd export`` uses, built on ``posix`` alone: the hook process's ``os``.

``import os`` costs a process that starts with ``-I -S`` more than the rest of Python's
start-up after ``posix`` (5.6 M of its 27 M instructions, about 2 ms: os, posixpath, stat,
genericpath, and the two dozen abstract base classes of _collections_abc that os needs for
``os.environ``). The hooks start ``ctxd export`` on entering a project, so every first
visit paid it. :func:`install` (``export_entry.hook_process()``, before any other ctxd
module is imported) puts this module in ``sys.modules["os"]``; nothing else ever does.

What it defines behaves exactly as ``os`` and ``os.path`` on POSIX do (the same
``posix`` functions, and the path functions written to posixpath's documented rules
for str paths, the real posixpath's for any other type; tests/test_posix_os.py compares
them on generated paths, as str and as bytes, and on symlink trees). Anything else
(``os.fork``, ``os.path.splitext``, ...) is the real thing: the first use of a name this
module lacks imports the real ``os``, which from then on is ``sys.modules["os"]`` for
every later import, so a module that needs more of os (subprocess for an ``on_enter``
command, platformdirs off Linux) gets all of it. ``environ`` is a plain dict decoded like
``os.environ``: the hook process reads its environment and never changes it.
"""

import posix
import sys

_real = None  # the real os, once something needed it


def _real_os():
    global _real
    if _real is None:
        mine = sys.modules.get("os")
        if mine is _self:
            del sys.modules["os"]
            sys.modules.pop("os.path", None)
        import os as real  # noqa: PLC0415  (the point: only when needed)

        _real = real
    return _real


def __getattr__(name):  # PEP 562: what this module lacks comes from the real os
    return getattr(_real_os(), name)


def install():
    """Be ``os`` (and ``os.path``) for this process, unless the real one is already loaded."""
    if "os" not in sys.modules:
        sys.modules["os"] = _self
        sys.modules["os.path"] = path


_ENC = sys.getfilesystemencoding()

sep = "/"
curdir = "."
pardir = ".."
name = "posix"
error = OSError
environ = {k.decode(_ENC, "surrogateescape"): v.decode(_ENC, "surrogateescape")  # as os.environ decodes
           for k, v in posix.environ.items()}

# the posix functions os re-exports as they are
stat = posix.stat
lstat = posix.lstat
open = posix.open  # noqa: A001  (os.open)
close = posix.close
read = posix.read
write = posix.write
fsync = posix.fsync
unlink = posix.unlink
remove = posix.remove
rmdir = posix.rmdir
mkdir = posix.mkdir
rename = posix.rename
replace = posix.replace
link = posix.link
symlink = posix.symlink
readlink = posix.readlink
listdir = posix.listdir
scandir = posix.scandir
utime = posix.utime
umask = posix.umask
access = posix.access
getcwd = posix.getcwd
getpid = posix.getpid
getuid = posix.getuid
urandom = posix.urandom
strerror = posix.strerror
fspath = posix.fspath
_exit = posix._exit
F_OK, R_OK, W_OK, X_OK = posix.F_OK, posix.R_OK, posix.W_OK, posix.X_OK
O_RDONLY, O_WRONLY, O_RDWR = posix.O_RDONLY, posix.O_WRONLY, posix.O_RDWR
O_CREAT, O_EXCL, O_TRUNC, O_APPEND = posix.O_CREAT, posix.O_EXCL, posix.O_TRUNC, posix.O_APPEND
O_CLOEXEC = posix.O_CLOEXEC


def fdopen(fd, mode="r", buffering=-1, encoding=None, *args, **kwargs):
    if not isinstance(fd, int):
        raise TypeError(f"invalid fd type ({type(fd)}, expected integer)")
    import io  # loaded at start-up already

    if "b" not in mode:
        encoding = io.text_encoding(encoding)
    return io.open(fd, mode, buffering, encoding, *args, **kwargs)


def makedirs(name, mode=0o777, exist_ok=False):
    if type(name) is not str:
        return _real_os().makedirs(name, mode, exist_ok)
    head, tail = path.split(name)
    if not tail:
        head, tail = path.split(head)
    if head and tail and not path.exists(head):
        try:
            makedirs(head, exist_ok=exist_ok)
        except FileExistsError:
            pass  # another process made it meanwhile
        if tail == curdir:
            return
    try:
        mkdir(name, mode)
    except OSError:
        if not exist_ok or not path.isdir(name):
            raise


# -- os.path (posixpath) -------------------------------------------------------

_S_IFMT, _S_IFDIR, _S_IFREG, _S_IFLNK = 0o170000, 0o040000, 0o100000, 0o120000


def _stat_mode(p, fn=posix.stat):
    try:
        return fn(p).st_mode
    except (OSError, ValueError):
        return None


def _exists(p):
    return _stat_mode(p) is not None


def _isfile(p):
    m = _stat_mode(p)
    return m is not None and m & _S_IFMT == _S_IFREG


def _isdir(p):
    m = _stat_mode(p)
    return m is not None and m & _S_IFMT == _S_IFDIR


def _islink(p):
    m = _stat_mode(p, posix.lstat)
    return m is not None and m & _S_IFMT == _S_IFLNK


def _isabs(p):
    p = posix.fspath(p)
    if type(p) is not str:
        return _real_os().path.isabs(p)
    return p.startswith("/")


def _join(a, *parts):
    a = posix.fspath(a)
    if type(a) is not str:
        return _real_os().path.join(a, *parts)  # bytes: the real one
    out = a
    for b in map(posix.fspath, parts):
        if type(b) is not str:
            return _real_os().path.join(a, *parts)  # mixed types: the real one's TypeError
        if b.startswith("/"):
            out = b
        elif not out or out.endswith("/"):
            out += b
        else:
            out += "/" + b
    return out


def _split(p):
    p = posix.fspath(p)
    if type(p) is not str:
        return _real_os().path.split(p)
    i = p.rfind("/") + 1
    head, tail = p[:i], p[i:]
    if head and head != "/" * len(head):
        head = head.rstrip("/")
    return head, tail


def _dirname(p):
    return _split(p)[0]


def _basename(p):
    p = posix.fspath(p)
    if type(p) is not str:
        return _real_os().path.basename(p)
    return p[p.rfind("/") + 1:]


def _normpath(p):
    p = posix.fspath(p)
    if type(p) is not str:
        return _real_os().path.normpath(p)
    if not p:
        return "."
    # POSIX keeps exactly two leading slashes (implementation-defined); one or three+ become one
    lead = 2 if p.startswith("//") and not p.startswith("///") else (1 if p.startswith("/") else 0)
    parts = []
    for c in p.split("/"):
        if c in ("", "."):
            continue
        if c != ".." or (not lead and not parts) or (parts and parts[-1] == ".."):
            parts.append(c)
        elif parts:
            parts.pop()
    return "/" * lead + "/".join(parts) or "."


def _abspath(p):
    p = posix.fspath(p)
    if type(p) is not str:
        return _real_os().path.abspath(p)
    if not p.startswith("/"):
        p = _join(posix.getcwd(), p)
    return _normpath(p)


def _expanduser(p):
    p = posix.fspath(p)
    if type(p) is not str:
        return _real_os().path.expanduser(p)
    if not p.startswith("~"):
        return p
    i = p.find("/", 1)
    if i < 0:
        i = len(p)
    if i == 1:
        if "HOME" in environ:
            home = environ["HOME"]
        else:
            import pwd  # a builtin module

            try:
                home = pwd.getpwuid(posix.getuid()).pw_dir
            except KeyError:
                return p  # no entry for this uid in the password database
    else:
        import pwd

        try:
            home = pwd.getpwnam(p[1:i]).pw_dir
        except KeyError:
            return p
    home = home.rstrip("/")
    return (home + p[i:]) or "/"


def _realpath(filename, *, strict=False):
    filename = posix.fspath(filename)
    if type(filename) is not str:
        return _real_os().path.realpath(filename, strict=strict)
    p, _ = _resolve("", filename, strict, {})
    return _abspath(p)


def _resolve(done, rest, strict, seen):
    """*done* (resolved) joined with *rest* (not yet), every symlink on the way followed;
    (path, False) where a symlink loop stopped it (the rest left as it is)."""
    if rest.startswith("/"):
        rest = rest[1:]
        done = "/"
    while rest:
        part, _, rest = rest.partition("/")
        if not part or part == ".":
            continue
        if part == "..":
            if done:
                done, tail = _split(done)
                if tail == "..":
                    done = _join(done, "..", "..")
            else:
                done = ".."
            continue
        candidate = _join(done, part)
        try:
            mode = posix.lstat(candidate).st_mode
        except OSError:
            if strict:
                raise
            mode = 0
        if mode & _S_IFMT != _S_IFLNK:
            done = candidate
            continue
        if candidate in seen:
            done = seen[candidate]
            if done is not None:
                continue  # resolved before
            if strict:  # a loop
                posix.stat(candidate)  # raises the loop's OSError
            return _join(candidate, rest), False
        seen[candidate] = None  # being resolved
        done, ok = _resolve(done, posix.readlink(candidate), strict, seen)
        if not ok:
            return _join(done, rest), False
        seen[candidate] = done
    return done, True


def _samefile(a, b):
    s1, s2 = posix.stat(a), posix.stat(b)
    return s1.st_ino == s2.st_ino and s1.st_dev == s2.st_dev


path = type(sys)("os.path")  # a module object, like posixpath
path.__dict__.update(
    sep=sep, curdir=curdir, pardir=pardir, exists=_exists, isfile=_isfile, isdir=_isdir,
    islink=_islink, isabs=_isabs, join=_join, split=_split, dirname=_dirname, basename=_basename,
    normpath=_normpath, abspath=_abspath, expanduser=_expanduser, realpath=_realpath,
    samefile=_samefile,
    __getattr__=lambda name: getattr(_real_os().path, name),
)
_self = sys.modules[__name__]
