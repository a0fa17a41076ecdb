"""What the real `ctxd export` command (the one the hooks run) loads on entering a project.

Each module the cd path imports costs every first visit of a project its
unmarshalling and execution (pins.py and the .contextrc parser alone were
~1 ms); each extension module (zlib, binascii, ...) a dlopen. The modules
beyond the interpreter's own are checked against a budget here: a new one on
the path needs a reason and an entry below.
"""

import json
import os
import subprocess

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

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
