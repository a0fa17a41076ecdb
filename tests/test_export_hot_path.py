"""What the real `ctxd export` command (the one the hooks run) loads on entering a project.

Each module the cd path imports costs every first visit of a project its
unmarshalling and execution (pins.py and the .contextrc parser alone were
~1 ms); each extension module (zlib, binascii, ...) a dlopen. The modules
beyond the interpreter's own are checked against a budget here: a new one on
the path needs a reason and an entry below.

The export bundle (ctxd/fastpath/bundle.py): the hook's export process takes the hot
path's modules from one file, and only while that file is exactly what the sources
and this interpreter would give; anything else and it imports them as before.
"""

import json
import marshal
import os
import subprocess

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ctxd.fastpath import bundle
from ctxd.shells.base import EXPORT_CALL, export_command

# the standard library the cd path may use: the builtin hashes for trust keys, parse-cache
# keys and project keys (see fileio.sha256_hex, paths). Not the real os: its "os" and
# "os.path" are ctxd.fastpath.posix_os (what importing os loads costs more than the rest of it)
STDLIB = {"zipimport", "os", "os.path", "_sha1", "_sha256", "_sha2"}
REAL_OS = {"posixpath", "genericpath", "stat", "_collections_abc"}
# ctxd's own modules on the way into a python project with no .contextrc and no pin file
CTXD = {"ctxd", "ctxd.fastpath", "ctxd.fastpath.export_entry", "ctxd.errors", "ctxd.paths", "ctxd.shells",
        "ctxd.shells.base", "ctxd.shells.bash", "ctxd.activation", "ctxd.activation.export",
        "ctxd.activation.detectors", "ctxd.activation.envdiff", "ctxd.activation.state",
        "ctxd.fastpath.minijson", "ctxd.activation.planner", "ctxd.activation.config",
        "ctxd.activation.fileio", "ctxd.activation.trust", "ctxd.activation.revisit"}
# never on that path: loaded only for what needs them
LATER = {"zlib", "binascii", "hashlib", "re", "json", "tomllib", "subprocess", "fnmatch", "platformdirs", "click",
         "ctxd.activation.pins", "ctxd.activation.contextrc", "ctxd.activation.direnv",
         "ctxd.activation.enter_leave", "ctxd.activation.dotenv_files", "ctxd.boundary"}

DUMP = ("\nimport sys as _s; _s.stderr.write('\\nMODULES=' + ' '.join(sorted(_s.modules))"
        " + '\\nOS=' + getattr(_s.modules.get('os'), '__name__', '-'))\n")


def _modules(argv, cwd, env, real_os=False):
    # hook_main() ends the process at once (no finally would run): what it runs, in its place
    assert argv[-1].endswith(EXPORT_CALL)
    code = argv[-1][:-len(EXPORT_CALL)] + ("from ctxd.fastpath.export_entry import export_main, hook_process\n"
                                           "hook_process()\n"
                                           "try:\n    export_main()\nfinally:" + DUMP.replace("\n", "\n    "))
    p = subprocess.run(argv[:-1] + [code, "export", "bash"], cwd=cwd, env=env, capture_output=True, text=True)
    assert "MODULES=" in p.stderr, p.stderr
    mods, _, os_name = p.stderr.rsplit("MODULES=", 1)[1].partition("\nOS=")
    assert os_name.strip() == ("os" if real_os else "ctxd.fastpath.posix_os"), os_name
    return p, set(mods.split())


@pytest.fixture
def fresh(tmp_path):
    home = tmp_path / "home"
    tree = tmp_path / "tree"
    (home / ".config" / "ctxd").mkdir(parents=True)
    (home / ".config" / "ctxd" / "config.toml").write_text("[trust]\nroots = [%s]\n" % json.dumps(str(tree)))
    proj = tree / "proj"
    (proj / ".venv" / "bin").mkdir(parents=True)
    (proj / ".venv" / "bin" / "activate").write_text("")
    (proj / "pyproject.toml").write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CTXD_", "XDG_", "_CTXD", "DIRENV_"))}
    env.update(HOME=str(home), PWD=str(proj))
    return proj, env


def test_entering_a_project_loads_only_the_budgeted_modules(fresh):
    proj, env = fresh
    argv = export_command()
    nothing = subprocess.run([argv[0], "-I", "-S", "-c", DUMP], cwd=proj, env=env, capture_output=True, text=True)
    base = set(nothing.stderr.rsplit("MODULES=", 1)[1].partition("\nOS=")[0].split()) - {"__main__"}  # its own
    first = _modules(argv, proj, env)[1]
    assert "tomllib" in first  # the first run parses config.toml and caches the result
    p, mods = _modules(argv, proj, env)  # every later one reads the cache: what each cd pays
    assert p.returncode == 0 and f"export VIRTUAL_ENV={proj}/.venv" in p.stdout, p.stdout + p.stderr
    extra = mods - base - {"__main__"}
    assert not extra & LATER, sorted(extra & LATER)
    assert not extra & REAL_OS, sorted(extra & REAL_OS)
    os_module = {"ctxd.fastpath.posix_os"}
    assert extra - STDLIB - CTXD - os_module == set(), sorted(extra - STDLIB - CTXD - os_module)
    assert CTXD | os_module <= extra  # the budget names what is really there


def test_a_contextrc_or_a_pin_file_loads_its_module(fresh):
    proj, env = fresh
    (proj / ".nvmrc").write_text("22\n")
    mods = _modules(export_command(), proj, env)[1]
    assert "ctxd.activation.pins" in mods and "ctxd.activation.contextrc" not in mods
    (proj / ".contextrc").write_text("[env]\nA = '1'\n")
    mods = _modules(export_command(), proj, env)[1]
    assert "ctxd.activation.contextrc" in mods


@pytest.mark.parametrize("call", ["from ctxd.export_entry import hook_main;hook_main()",
                                  "from ctxd.export_entry import export_main;export_main()",
                                  "from ctxd._entry import export_main;export_main()"])
def test_hooks_rendered_by_earlier_versions_still_export(fresh, call):
    """A shell opened before an upgrade keeps the hook it loaded, whose export command ends with
    one of these: ctxd/export_entry.py and ctxd/_entry.py stay for it."""
    proj, env = fresh
    argv = export_command()
    code = argv[-1][:-len(EXPORT_CALL)] + call
    p = subprocess.run(argv[:-1] + [code, "export", "bash"], cwd=proj, env=env, capture_output=True, text=True)
    assert p.returncode == 0 and f"export VIRTUAL_ENV={proj}/.venv" in p.stdout, p.stdout + p.stderr


def _ansi_c_quote_bytewise(value, always=False):
    """ctxd.shells.bash.ansi_c_quote as it was before its fast path for printable ASCII."""
    from ctxd.shells import bash

    data = value.encode("utf-8", "surrogateescape")
    if (not always and data and not data.translate(None, bash._PLAIN_BYTES) and data[0] not in b"=%"
            and b":=" not in data):
        return value
    table = {c: "\\x%02x" % c for c in range(256) if not (0x20 <= c < 0x7F) or c in (0x27, 0x5C)}
    return "$'" + data.decode("latin-1").translate(table) + "'"



@given(st.text() | st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7e)), st.booleans())
@example("", False)
@example("=x", False)
@example("a:=b", False)
@example("%x", False)
@example("/p/a b", False)
@example("it's", False)
@example("a\\b", True)
@example("\\\n'\\x0a\t", False)
@example("".join(map(chr, range(0, 0x20))) + "\\'\x7f\u00e9\udcff", False)
@settings(max_examples=400)
def test_bash_quoting_fast_path_is_the_bytewise_quoting(value, always):
    from ctxd.shells.bash import ansi_c_quote

    assert ansi_c_quote(value, always) == _ansi_c_quote_bytewise(value, always)


def test_the_hook_command_exits_with_the_export_status_and_all_its_output(fresh, tmp_path):
    # hook_main ends without the interpreter's teardown: the status and every byte must survive
    proj, env = fresh
    argv = export_command()
    p = subprocess.run(argv + ["export", "bash"], cwd=proj, env=env, capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.endswith("\n") and f"export VIRTUAL_ENV={proj}/.venv" in p.stdout
    assert "_ctxd_restore() {" in p.stdout and p.stderr == ""
    p = subprocess.run(argv + ["export", "csh"], cwd=proj, env=env, capture_output=True, text=True)
    assert p.returncode == 2 and "unsupported shell 'csh'" in p.stderr, p.stderr
    p = subprocess.run(argv + ["export", "bash"], cwd=proj, env=dict(env, CTXD_STATE="garbage"),
                       capture_output=True, text=True)
    assert p.returncode == 6 and "CTXD_STATE is corrupt" in p.stdout, p.stdout + p.stderr
    big = dict(env, **{f"CT_BIG_{i}": "x" * 200 for i in range(400)})  # more than a pipe's buffer
    (proj / ".contextrc").write_text("[env]\n" + "".join(f"CT_V{i} = '{'y' * 300}'\n" for i in range(300)))
    subprocess.run(["ctxd", "allow", str(proj)], env=env, cwd=proj, check=True, capture_output=True)
    p = subprocess.run(argv + ["export", "bash"], cwd=proj, env=big, capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.count("export CT_V") == 300 and p.stdout.endswith("\n"), p.stderr


# -- the export bundle --------------------------------------------------------------------

# instead of hook_main(): the export, then which ctxd modules importlib loaded (they have
# a __spec__; the bundle's have none) and what os is (ctxd.fastpath.posix_os either way)
PROBE = ("from ctxd.fastpath.export_entry import export_main, hook_process\nhook_process()\n"
         "try:\n    export_main()\nfinally:\n"
         "    import sys as _s\n"
         "    _s.stderr.write('\\nFROM_DISK=' + ' '.join(sorted(n for n, m in _s.modules.items()"
         " if n.startswith('ctxd') and m.__spec__ is not None))"
         " + '\\nFROM_BUNDLE=' + ' '.join(sorted(n for n, m in _s.modules.items()"
         " if n.startswith('ctxd') and m.__spec__ is None))"
         " + '\\nOS=' + _s.modules['os'].__name__"
         " + (' disk' if _s.modules['os'].__spec__ is not None else ' bundle') + '\\n')\n")


def _env(env):
    return {k: env[k] for k in ("HOME", "PATH", "PWD", "XDG_CACHE_HOME")}


@pytest.fixture
def project(fresh):
    """fresh's project and environment, its cache dir named (as ctxd computes it in this process too)."""
    proj, env = fresh
    return proj, dict(env, XDG_CACHE_HOME=os.path.join(env["HOME"], ".cache"))


def probe(proj, env, shell="bash"):
    """(process, modules importlib loaded, modules the bundle made) for an export as the hook runs it."""
    argv = export_command(shell, env)
    assert argv[-1].endswith(EXPORT_CALL)
    p = subprocess.run(argv[:-1] + [argv[-1][:-len(EXPORT_CALL)] + PROBE, "export", shell],
                       cwd=proj, env=env, capture_output=True, text=True)
    tail = p.stderr.rsplit("\nFROM_DISK=", 1)
    assert len(tail) == 2, p.stderr
    disk, _, rest = tail[1].partition("\nFROM_BUNDLE=")
    made, _, os_name = rest.partition("\nOS=")
    os_name, _, p.os_from = os_name.strip().partition(" ")
    assert os_name == "ctxd.fastpath.posix_os"
    p.stderr = tail[0]
    return p, set(disk.split()), set(made.split())


def plain_export(proj, env, shell="bash"):
    return subprocess.run(export_command() + ["export", shell], cwd=proj, env=env, capture_output=True, text=True)


def rewrite(path, change):
    """Rewrite the bundle at *path* with change(magic, format, loader, entries) -> the same four."""
    with open(path, "rb") as f:
        m, body = marshal.loads(f.read())
    v, loader, entries = marshal.loads(body)
    m, v, loader, entries = change(m, v, loader, entries)
    with open(path, "wb") as f:
        f.write(marshal.dumps((m, marshal.dumps((v, loader, entries)))))


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish", "tcsh", "elvish", "xonsh", "nu"])
def test_a_first_visit_through_the_bundle_imports_no_ctxd_module_from_disk(project, shell):
    proj, env = project
    plain_export(proj, env, shell)  # the first export parses config.toml once and caches it
    assert not os.path.exists(bundle.bundle_path(shell, env))
    p, disk, made = probe(proj, env, shell)  # no bundle yet: everything from disk, as before
    assert p.returncode == 0 and made == set() and {"ctxd.activation.export", f"ctxd.shells.{shell}"} <= disk
    path = bundle.write(shell, env)
    assert path == bundle.bundle_path(shell, env) and os.path.isfile(path)
    p, disk, made = probe(proj, env, shell)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert disk == set(), sorted(disk)  # a new module on the path belongs in bundle.CORE
    assert made == set(bundle.modules_for(shell)) and f"ctxd.shells.{shell}" in made
    assert p.stdout == plain_export(proj, env, shell).stdout  # the same code, the same output
    assert f"{proj}/.venv" in p.stdout


def test_the_hook_command_applies_the_project_through_the_bundle(project):
    proj, env = project
    bundle.write("bash", env)
    p = subprocess.run(export_command("bash", env) + ["export", "bash"], cwd=proj, env=env,
                       capture_output=True, text=True)
    assert p.returncode == 0 and p.stderr == "" and f"export VIRTUAL_ENV={proj}/.venv" in p.stdout
    p = subprocess.run(export_command("bash", env) + ["export", "bash"], cwd=proj, env=dict(env, CTXD_STATE="junk"),
                       capture_output=True, text=True)  # an error takes its usual way out (ctxd.boundary, from disk)
    assert p.returncode == 6 and "CTXD_STATE is corrupt" in p.stdout, p.stdout + p.stderr


def _one_module_newer(m, v, loader, entries):
    e = list(entries)
    name, path, mtime_ns, size, is_pkg, code = e[5]
    e[5] = (name, path, mtime_ns - 1, size, is_pkg, code)  # as if the source changed after it was built
    return m, v, loader, tuple(e)


def _one_module_resized(m, v, loader, entries):
    e = list(entries)
    name, path, mtime_ns, size, is_pkg, code = e[-1]
    e[-1] = (name, path, mtime_ns, size + 1, is_pkg, code)
    return m, v, loader, tuple(e)


def _a_body_fails(m, v, loader, entries):
    e = list(entries)
    name, path, mtime_ns, size, is_pkg, _ = e[8]
    e[8] = (name, path, mtime_ns, size, is_pkg, compile("raise RuntimeError('half a bundle')", path, "exec"))
    return m, v, loader, tuple(e)


def _foreign(marker):
    def change(m, v, loader, entries):
        # another interpreter's bundle: its code must never run (here it would leave a file)
        return (b"\x00\x00\r\n", v, compile(f"open({str(marker)!r}, 'w').close()", "x", "exec"), entries)
    return change


def _other_format(marker):
    def change(m, v, loader, entries):
        return m, v + 1, compile(f"open({str(marker)!r}, 'w').close()", "x", "exec"), entries
    return change


@pytest.mark.parametrize("case", ["newer", "resized", "body fails", "foreign", "other format", "torn", "empty",
                                  "not marshal", "a directory"])
def test_a_stale_torn_or_foreign_bundle_stands_down_and_the_export_imports_as_before(project, tmp_path, case):
    proj, env = project
    plain_export(proj, env)
    want = plain_export(proj, env).stdout
    path = bundle.write("bash", env)
    marker = tmp_path / "ran"
    if case == "newer":
        rewrite(path, _one_module_newer)
    elif case == "resized":
        rewrite(path, _one_module_resized)
    elif case == "body fails":
        rewrite(path, _a_body_fails)
    elif case == "foreign":
        rewrite(path, _foreign(marker))
    elif case == "other format":
        rewrite(path, _other_format(marker))
    elif case == "torn":
        data = open(path, "rb").read()
        open(path, "wb").write(data[:len(data) // 2])
    elif case == "empty":
        open(path, "wb").close()
    elif case == "not marshal":
        open(path, "w").write("export PATH=/evil\n")
    else:
        os.unlink(path)
        os.mkdir(path)
    p, disk, made = probe(proj, env)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert made == set() and CTXD <= disk, (sorted(made), sorted(disk))  # nothing of it left behind
    assert p.os_from == "disk"  # os is the posix_os importlib loaded, not one the bundle made
    assert p.stdout == want
    assert not marker.exists()


def test_ctxd_hook_writes_the_bundle_and_rewrites_it_only_when_it_stands_down(project):
    proj, env = project
    env = _env(env)
    r = subprocess.run(["ctxd", "hook", "bash"], cwd=proj, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    path = bundle.bundle_path("bash", env)
    assert path in r.stdout  # the hook's export command names it
    st = os.stat(path)
    assert oct(st.st_mode & 0o777) == "0o644"  # code, not conversations: no secret in it
    subprocess.run(["ctxd", "hook", "bash"], cwd=proj, env=env, capture_output=True, check=True)
    assert os.stat(path).st_ino == st.st_ino  # current: left alone (tcsh & co. run `ctxd hook` at every start)
    rewrite(path, _one_module_newer)
    subprocess.run(["ctxd", "hook", "bash"], cwd=proj, env=env, capture_output=True, check=True)
    assert os.stat(path).st_ino != st.st_ino
    assert probe(proj, env)[2] == set(bundle.modules_for("bash"))


def test_a_cache_that_cannot_be_written_leaves_the_hook_working(project):
    proj, env = project
    env = _env(env)
    cache = os.path.join(env["HOME"], ".cache")
    open(cache, "w").close()  # ~/.cache is a file: nothing can be made under it
    r = subprocess.run(["ctxd", "hook", "bash"], cwd=proj, env=env, capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr == "" and "_ctxd_hook" in r.stdout, r.stderr
    assert bundle.write("bash", env) is None
    p = subprocess.run(export_command("bash", env) + ["export", "bash"], cwd=proj, env=env,
                       capture_output=True, text=True)
    assert p.returncode == 0 and p.stderr == "" and f"export VIRTUAL_ENV={proj}/.venv" in p.stdout


def test_an_edit_of_a_bundled_module_makes_the_start_up_copy_stale():
    # the copy's guard checks these files: the next shell then runs `ctxd hook`, which rewrites the bundle
    from ctxd.shells import get_shell
    from ctxd.fastpath.startup_copy import sources

    for shell in ("bash", "zsh", "fish"):
        found = set(sources(get_shell(shell)))
        assert {bundle.source_file(m) for m in bundle.modules_for(shell)} <= found
        assert bundle.__file__.replace(".pyc", ".py") in found or bundle.source_file("ctxd.fastpath.bundle") in found


def test_doctor_says_whether_the_bundle_is_current(project):
    from ctxd.commands.doctor import OK, WARN, check_bundle

    proj, env = project
    c = check_bundle("zsh", env)
    assert c.status == WARN and "is missing" in c.message and "ctxd hook zsh" in c.fix
    bundle.write("zsh", env)
    c = check_bundle("zsh", env)
    assert c.status == OK and "is current" in c.message, c.message
    rewrite(bundle.bundle_path("zsh", env), _one_module_resized)
    c = check_bundle("zsh", env)
    assert c.status == WARN and "stands down" in c.message


def test_ctxd_setup_writes_the_bundle_with_the_start_up_copy(project):
    proj, env = project
    env = _env(env)
    r = subprocess.run(["ctxd", "setup", "--shell", "fish", "--write"], cwd=proj, env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert bundle.current(bundle.bundle_path("fish", env), bundle.modules_for("fish"))
