"""ctxd.fastpath.posix_os is ``os`` for the hook process: what it defines must be what os does.

Each function it writes itself (the path functions; makedirs) is compared with the
real os.path / os on generated input: path strings with every awkward part (``..``,
``.``, empty components, one, two or three leading slashes, ``~``), and a directory
tree with files, relative, absolute, chained, dangling and looping symlinks. The rest
of it is posix's own functions, which os re-exports. And anything it lacks comes from
the real os, which then takes its place for every later import.
"""

import os
import posixpath
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ctxd.fastpath import posix_os

SITE = os.path.dirname(os.path.dirname(os.path.dirname(posix_os.__file__)))  # the directory holding ctxd/
PARTS = ["", ".", "..", "a", "b", "a b", "~", "~root", "~nosuchuser", "x.y", "-"]
path_text = st.builds(
    lambda lead, parts, trail: lead + "/".join(parts) + trail,
    st.sampled_from(["", "/", "//", "///", "~", "~/", "~root/"]),
    st.lists(st.sampled_from(PARTS), max_size=6),
    st.sampled_from(["", "/", "//"]),
)


def same(f, g, *args, **kw):
    """f(*args) and g(*args) return the same value or raise the same exception type."""
    try:
        want = ("ok", g(*args, **kw))
    except Exception as e:  # noqa: BLE001  (comparing whatever it is)
        want = ("raises", type(e))
    try:
        got = ("ok", f(*args, **kw))
    except Exception as e:  # noqa: BLE001
        got = ("raises", type(e))
    assert got == want, (args, kw)


@given(path_text, st.lists(path_text, max_size=3))
@example("", [])
@example("a", [""])
@example("/a", ["/b", "c"])
@example("a/", ["b"])
@settings(max_examples=500)
def test_string_functions_are_posixpaths(p, more):
    P = posix_os.path
    same(P.join, posixpath.join, p, *more)
    for name in ("split", "dirname", "basename", "normpath", "isabs", "abspath"):
        same(getattr(P, name), getattr(posixpath, name), p)
        same(getattr(P, name), getattr(posixpath, name), p.encode())  # bytes, as subprocess passes
    same(P.join, posixpath.join, p.encode(), *(m.encode() for m in more))


def test_join_with_bytes_or_mixed_types_is_the_real_ones():
    assert posix_os.path.join(b"/a", b"b") == b"/a/b"
    with pytest.raises(TypeError):
        posix_os.path.join("/a", b"b")


@given(path_text, st.sampled_from([None, "/home/u", "/home/u/", "/", "//", "", "rel"]))
@example("~", None)
@example("~/x", "/")
@settings(max_examples=300)
def test_expanduser_is_posixpaths(p, home):
    saved_env, saved_home = posix_os.environ, os.environ.get("HOME")
    try:
        posix_os.environ = dict(os.environ)
        if home is None:
            posix_os.environ.pop("HOME", None)
            os.environ.pop("HOME", None)
        else:
            posix_os.environ["HOME"] = os.environ["HOME"] = home
        same(posix_os.path.expanduser, posixpath.expanduser, p)
        same(posix_os.path.expanduser, posixpath.expanduser, p.encode())
    finally:
        posix_os.environ = saved_env
        if saved_home is None:
            os.environ.pop("HOME", None)
        else:
            os.environ["HOME"] = saved_home


# -- on a real tree --------------------------------------------------------------

NAMES = ["d1", "f", "sub", "f2", "l_d1", "l_abs", "l_up", "l_dangling", "l_loop1", "l_self",
         "l_chain", "l_back", "l_file", "l_deep", "missing", "..", ".", ""]


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("posix_os") / "root")
    os.makedirs(os.path.join(root, "d1", "sub"))
    for f in ("d1/f", "f2"):
        with open(os.path.join(root, f), "w") as fh:
            fh.write("x")
    links = {
        "l_d1": "d1", "l_abs": os.path.join(root, "d1", "sub"), "l_up": "..", "l_dangling": "nowhere",
        "l_loop1": "l_loop2", "l_loop2": "l_loop1", "l_self": "l_self", "l_chain": "l_d1/sub",
        "d1/l_back": "..", "l_file": "f2", "l_deep": "d1/l_back/l_chain/../f",
    }
    for name, target in links.items():
        os.symlink(target, os.path.join(root, name))
    return root


@given(st.lists(st.sampled_from(NAMES), min_size=0, max_size=6), st.booleans())
@example(["..", "..", "d1"], True)  # above the working directory, two levels
@example(["l_up", "..", "l_loop1", "f"], False)
@example(["l_deep"], True)
@settings(max_examples=600, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_tree_functions_are_the_real_ones(tree, parts, relative):
    here = os.getcwd()
    try:
        os.chdir(tree)
        p = "/".join(parts) if relative else tree + "/" + "/".join(parts)
        same(posix_os.path.realpath, posixpath.realpath, p)
        same(posix_os.path.realpath, posixpath.realpath, p, strict=True)
        for name in ("exists", "isfile", "isdir", "islink", "abspath"):
            same(getattr(posix_os.path, name), getattr(posixpath, name), p)
        same(posix_os.path.samefile, posixpath.samefile, p, tree + "/d1")
        for name in ("realpath", "exists", "isfile", "isdir", "islink", "abspath"):
            same(getattr(posix_os.path, name), getattr(posixpath, name), p.encode())
    finally:
        os.chdir(here)


def test_makedirs_is_the_real_ones(tmp_path):
    cases = ["a", "a/b/c", "a/b/c", "x/./y", "f/sub", "p/q/", "p/q/.", b"r/s/.", b"r/s"]
    for exist_ok in (False, True):
        for base in (tmp_path / f"mine{exist_ok}", tmp_path / f"real{exist_ok}"):
            base.mkdir()
            (base / "f").write_text("a file in the way")
        results = {}
        for impl, base in ((posix_os.makedirs, tmp_path / f"mine{exist_ok}"), (os.makedirs, tmp_path / f"real{exist_ok}")):
            out = []
            for c in cases:
                try:
                    impl(os.path.join(os.fsencode(base) if isinstance(c, bytes) else str(base), c), 0o755,
                         exist_ok=exist_ok)
                    out.append("ok")
                except OSError as e:
                    out.append(type(e).__name__)
            out.append(sorted(str(p.relative_to(base)) for p in base.rglob("*")))
            results[impl is os.makedirs] = out
        assert results[False] == results[True]


def test_fdopen_is_the_real_ones(tmp_path):
    f = tmp_path / "f"
    fd = os.open(f, os.O_WRONLY | os.O_CREAT, 0o600)
    with posix_os.fdopen(fd, "w") as fh:
        fh.write("é\n")
    assert f.read_bytes() == "é\n".encode()
    with pytest.raises(TypeError):
        posix_os.fdopen("3")


# -- in the hook process ---------------------------------------------------------

def _in_hook_process(code, env=None):
    prelude = ("import sys; sys.path.insert(0, %r)\nfrom ctxd.fastpath.export_entry import hook_process\n"
               "hook_process()\n" % SITE)
    return subprocess.run([sys.executable, "-I", "-S", "-c", prelude + code], capture_output=True,
                          env=env, timeout=60)


def test_environ_decodes_like_os_environ_undecodable_bytes_and_all():
    env = {b"PATH": b"/usr/bin:/bin", b"CT_UTF8": "é".encode(), b"CT_BAD": b"\xff\xfe/x", b"CT_\xe9": b"v",
           b"LC_ALL": b"C.UTF-8"}
    code = ("import os\nmine = dict(os.environ)\nassert os.__name__ == 'ctxd.fastpath.posix_os'\n"
            "import importlib; del sys.modules['os']; sys.modules.pop('os.path')\n"
            "real = importlib.import_module('os')\nassert real.__name__ == 'os'\n"
            "assert mine == dict(real.environ), (mine, dict(real.environ))\nprint('same', len(mine))")
    p = _in_hook_process(code, env=env)
    assert p.returncode == 0 and b"same" in p.stdout, p.stderr.decode()


def test_what_it_lacks_comes_from_the_real_os_which_then_takes_over():
    code = ("import os\nassert os.__name__ == 'ctxd.fastpath.posix_os' and 'posixpath' not in sys.modules\n"
            "assert os.path.splitext('a.b') == ('a', '.b')\n"  # not in posix_os.path
            "assert sys.modules['os'].__name__ == 'os' and sys.modules['os.path'].__name__ == 'posixpath'\n"
            "assert os.getenv('CT_X') == '1'\n"  # through posix_os, from the real one
            "import subprocess\n"  # a module that needs all of os
            "print(subprocess.run(['/bin/sh', '-c', 'echo $CT_X'], capture_output=True, text=True).stdout.strip())")
    p = _in_hook_process(code, env=dict(os.environ, CT_X="1"))
    assert p.returncode == 0 and p.stdout.strip() == b"1", p.stderr.decode()


def test_install_leaves_a_loaded_real_os_alone():
    p = subprocess.run([sys.executable, "-I", "-S", "-c",
                        "import sys; sys.path.insert(0, %r)\nimport os\nfrom ctxd.fastpath import posix_os\n"
                        "posix_os.install()\nassert sys.modules['os'] is os and os.__name__ == 'os'\nprint('ok')"
                        % SITE], capture_output=True, timeout=60)
    assert p.returncode == 0 and p.stdout.strip() == b"ok", p.stderr.decode()
