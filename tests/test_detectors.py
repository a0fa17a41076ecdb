import os

import pytest

from ctxd.activation import detectors
from ctxd.activation.detectors import all_markers, detect, find_root, read_pins


def touch(path, text=""):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


@pytest.mark.parametrize("marker,kind", [
    ("pyproject.toml", "python"), ("requirements.txt", "python"), ("setup.py", "python"),
    ("setup.cfg", "python"), ("Pipfile", "python"), ("package.json", "node"), ("go.mod", "go"),
    ("Cargo.toml", "rust"), ("Gemfile", "ruby"), ("pom.xml", "java"), ("build.gradle", "java"),
    ("build.gradle.kts", "java"), ("composer.json", "php"), ("deno.json", "deno"),
    ("deno.jsonc", "deno"), ("mix.exs", "elixir"), ("Makefile", "make"),
])
def test_each_marker_detects_its_type(tmp_path, marker, kind):
    touch(str(tmp_path / marker))
    assert [t for t, _ in detect(str(tmp_path), {}).types] == [kind]
    assert find_root(str(tmp_path / "a" / "b")) == str(tmp_path)


def test_several_types_and_their_markers(tmp_path):
    for m in ("pyproject.toml", "package.json", "Makefile"):
        touch(str(tmp_path / m))
    assert detect(str(tmp_path), {}).types == [
        ("python", ["pyproject.toml"]), ("node", ["package.json"]), ("make", ["Makefile"])]


def test_python_venv_environment(tmp_path):
    touch(str(tmp_path / "pyproject.toml"))
    touch(str(tmp_path / ".venv/bin/activate"))
    p = detect(str(tmp_path), {})
    venv = str(tmp_path / ".venv")
    assert ("VIRTUAL_ENV", venv) in [(n, v) for n, v, _, _ in p.sets]
    assert ("PYTHONHOME", None) in [(n, v) for n, v, _, _ in p.sets]
    assert ("PYTHONDONTWRITEBYTECODE", "1") in [(n, v) for n, v, _, _ in p.sets]
    assert [e for e, _ in p.prepend] == [venv + "/bin"]


def test_python_without_venv_sets_nothing_but_watches(tmp_path):
    touch(str(tmp_path / "requirements.txt"))
    os.makedirs(tmp_path / ".venv")  # being created
    p = detect(str(tmp_path), {})
    assert p.sets == [] and p.prepend == []
    assert str(tmp_path / ".venv") in p.watch and str(tmp_path) in p.watch


def test_node_php_ruby_paths(tmp_path):
    for m in ("package.json", "composer.json", "Gemfile"):
        touch(str(tmp_path / m))
    os.makedirs(tmp_path / "bin")
    os.makedirs(tmp_path / "vendor/bin")
    p = detect(str(tmp_path), {})
    assert [e for e, _ in p.prepend] == [
        str(tmp_path / "node_modules/.bin"), str(tmp_path / "bin"), str(tmp_path / "vendor/bin")]
    assert ("NODE_ENV", "development", "node: package.json", True) in p.sets


def test_go_flags(tmp_path):
    touch(str(tmp_path / "go.mod"), "module x\n\ngo 1.22.1\n")
    assert [(n, v) for n, v, _, _ in detect(str(tmp_path), {}).sets] == [("GOFLAGS", "-mod=mod")]


def test_nested_project_is_its_own_root(tmp_path):
    touch(str(tmp_path / "package.json"))
    touch(str(tmp_path / "packages/api/pyproject.toml"))
    os.makedirs(tmp_path / "packages/web/src")
    assert find_root(str(tmp_path / "packages/api")) == str(tmp_path / "packages/api")
    assert find_root(str(tmp_path / "packages/web/src")) == str(tmp_path)


def test_no_root_outside_projects(tmp_path):
    os.makedirs(tmp_path / "plain/dir")
    assert find_root(str(tmp_path / "plain/dir")) is None or not str(find_root(str(tmp_path / "plain/dir"))).startswith(str(tmp_path))


def test_contextrc_is_a_root_marker_and_markers_are_unique():
    ms = all_markers()
    assert ".contextrc" in ms and len(ms) == len(set(ms))
    for d in detectors.DETECTORS:
        assert set(d.markers) <= set(ms)


def test_version_pins(tmp_path):
    touch(str(tmp_path / ".python-version"), "# comment\n3.12.4\n")
    touch(str(tmp_path / ".nvmrc"), "v20.11.0\n")
    touch(str(tmp_path / ".node-version"), "20.11.0\n")
    touch(str(tmp_path / ".tool-versions"), "nodejs 20.11.0\npython 3.12.4 3.11.9  # two\n")
    touch(str(tmp_path / "rust-toolchain.toml"), '[toolchain]\nchannel = "1.78.0"\n')
    touch(str(tmp_path / "go.mod"), "module example.com/x\n\ngo 1.22\n")
    pins = read_pins(str(tmp_path))
    assert ("python", "3.12.4", ".python-version") in pins
    assert ("node", "v20.11.0", ".nvmrc") in pins
    assert ("node", "20.11.0", ".node-version") in pins
    assert ("rust", "1.78.0", "rust-toolchain.toml") in pins
    assert ("go", "1.22", "go.mod") in pins
    assert ("nodejs", "20.11.0", ".tool-versions") in pins
    assert ("python", "3.12.4 3.11.9", ".tool-versions") in pins


def test_broken_pin_file_does_not_break(tmp_path):
    touch(str(tmp_path / "rust-toolchain.toml"), "[toolchain\n")
    assert read_pins(str(tmp_path))[0][1].startswith("<unreadable")


def test_home_is_the_ceiling_of_the_root_walk(tmp_path):
    """A marker above $HOME does not make a directory in it a project (a stray /Makefile or
    /requirements.txt in a container image would otherwise make every directory one); $HOME
    itself still counts, and a directory outside $HOME still walks up to /."""
    home = tmp_path / "home"
    (home / "src" / "x").mkdir(parents=True)
    (tmp_path / "other" / "y").mkdir(parents=True)
    touch(str(tmp_path / "requirements.txt"))
    env = {"HOME": str(home)}
    assert find_root(str(home / "src" / "x"), environ=env) is None
    assert find_root(str(home), environ=env) is None
    assert find_root(str(tmp_path / "other" / "y"), environ=env) == str(tmp_path)
    # a trailing slash on HOME is the same directory; a name that only starts like it is not in it
    assert find_root(str(home / "src"), environ={"HOME": str(home) + "/"}) is None
    (tmp_path / "home2").mkdir()
    assert find_root(str(tmp_path / "home2"), environ=env) == str(tmp_path)
    # no HOME, or HOME=/: no ceiling
    assert find_root(str(home / "src" / "x"), environ={}) == str(tmp_path)
    assert find_root(str(home / "src" / "x"), environ={"HOME": "/"}) == str(tmp_path)
    touch(str(home / "Makefile"))
    assert find_root(str(home / "src" / "x"), environ=env) == str(home)


def test_a_symlinked_home_is_also_the_ceiling_where_it_resolves_to(tmp_path):
    """$HOME=/links/me -> /data/me: a physical path under /data/me (elvish's $pwd, a
    process's getcwd()) stops at /data/me as the logical one stops at $HOME."""
    real = tmp_path / "data" / "me"
    (real / "src").mkdir(parents=True)
    touch(str(tmp_path / "data" / "requirements.txt"))  # above the real home
    link = tmp_path / "links" / "me"
    link.parent.mkdir()
    os.symlink(str(real), str(link))
    env = {"HOME": str(link)}
    assert find_root(str(real / "src"), environ=env) is None
    assert find_root(str(link / "src"), environ=env) is None
    assert find_root(str(tmp_path / "data"), environ=env) == str(tmp_path / "data")
    # without the link (HOME names the real directory) nothing changes
    assert find_root(str(real / "src"), environ={"HOME": str(real)}) is None
    # a HOME that resolves to / is no ceiling
    os.symlink("/", str(tmp_path / "links" / "root"))
    assert find_root(str(tmp_path / "data" / "me"), environ={"HOME": str(tmp_path / "links" / "root")}) \
        == str(tmp_path / "data")


def test_contextrc_chain_stops_at_home(tmp_path):
    from ctxd.activation import contextrc

    home = tmp_path / "home"
    proj = home / "proj"
    proj.mkdir(parents=True)
    touch(str(tmp_path / ".contextrc"), "[env]\nX = '1'\n")
    files, probed = contextrc.chain(str(proj), {"HOME": str(home)})
    assert files == [] and probed == [str(proj / ".contextrc"), str(home / ".contextrc")]
    files, probed = contextrc.chain(str(proj), {})
    assert files == [str(tmp_path / ".contextrc")] and probed[-1] == "/.contextrc"
