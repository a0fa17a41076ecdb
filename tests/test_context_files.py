"""ctxd chat install agents-md|claude-md|gemini-md: one managed pointer block in the
context file an AI CLI already reads, the user's own text kept byte for byte.

Most tests call ctxd.integrations.contextfiles directly on real files; the last
ones run the ctxd console script in a tmp project (isolated paths: conftest).
"""

import os
import shutil
import stat
from functools import partial

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxd.errors import ConfigError
from ctxd.integrations import contextfiles as cf
from ctxdtest import ctxd

KINDS = ("agents-md", "claude-md", "gemini-md")
CTXD = shutil.which("ctxd")


@pytest.fixture
def root(tmp_path):
    r = tmp_path / "proj"
    (r / ".git").mkdir(parents=True)
    return r


@pytest.fixture
def data_dir(tmp_path):
    """A context directory outside the project, like the default one under ~/.local/share."""
    return str(tmp_path / "data" / "projects" / "proj-0123abcd")


def _file(root, kind):
    return root / cf.FILES[kind]


# -- what the pointer says, per tool ------------------------------------------------------

def test_claude_md_imports_the_context_file_by_absolute_path(root, data_dir):
    cf.install("claude-md", str(root), data_dir)
    text = (root / "CLAUDE.md").read_text()
    lines = text.splitlines()
    assert lines[0].startswith("<!-- ctxd:begin") and lines[-1] == "<!-- ctxd:end -->"
    assert f"@{data_dir}/context.md" in lines  # an import line of its own, outside any code block
    assert "```" not in text


def test_claude_md_escapes_spaces_in_the_import(root, tmp_path):
    spaced = str(tmp_path / "Application Support" / "ctxd" / "projects" / "p")
    cf.install("claude-md", str(root), spaced)
    assert "@" + (spaced + "/context.md").replace(" ", "\\ ") in (root / "CLAUDE.md").read_text().splitlines()


@pytest.mark.parametrize("kind", ["claude-md", "gemini-md"])
def test_a_project_local_store_is_imported_by_a_relative_path(root, kind):
    out = cf.install(kind, str(root), str(root / ".ctxd"))
    assert "@./.ctxd/context.md" in _file(root, kind).read_text().splitlines()
    assert not [line for line in out if "outside" in line]


def test_gemini_md_gets_an_instruction_not_an_import_it_would_refuse(root, data_dir):
    # Gemini CLI drops @imports that resolve outside the project ("Path traversal attempt").
    out = cf.install("gemini-md", str(root), data_dir)
    text = (root / "GEMINI.md").read_text()
    assert f"`{data_dir}/context.md`" in text
    assert not any(w.startswith("@") for w in text.split())  # nothing Gemini would try to import
    assert any("ctxd chat install gemini" in line for line in out)


def test_agents_md_tells_the_agent_which_file_to_read(root, data_dir):
    cf.install("agents-md", str(root), data_dir)
    body = (root / "AGENTS.md").read_text().splitlines()[1:-1]
    assert len(body) == 1 and f"read `{data_dir}/context.md`" in body[0]


# -- the user's file -------------------------------------------------------------------------

ORIGINALS = [
    "# Project\n\nUse pnpm.\n",
    "# Project\n\nno newline at the end",
    "ends with a blank line\n\n",
    "",
    "windows\r\nline endings\r\n",
    "中文说明：不要改动这里。\n",
    "```sh\nmake test\n```\n",
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("original", ORIGINALS)
def test_install_keeps_the_users_text_and_uninstall_restores_it_exactly(root, data_dir, kind, original):
    f = _file(root, kind)
    f.write_bytes(original.encode())
    cf.install(kind, str(root), data_dir)
    installed = f.read_bytes()
    assert installed.startswith(original.encode())
    assert installed.count(b"<!-- ctxd:begin") == 1
    if "\r\n" in original:
        assert installed.endswith(b"<!-- ctxd:end -->\r\n")
    cf.install(kind, str(root), data_dir)
    assert f.read_bytes() == installed  # twice is once
    cf.uninstall(kind, str(root))
    assert f.exists() and f.read_bytes() == original.encode()


def test_the_block_is_separated_from_the_users_last_line(root, data_dir):
    f = root / "CLAUDE.md"
    f.write_text("# Mine\nlast line")
    cf.install("claude-md", str(root), data_dir)
    assert f.read_text().startswith("# Mine\nlast line\n\n<!-- ctxd:begin")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(original=st.text(st.characters(blacklist_categories=("Cs",)), max_size=200)
       .filter(lambda t: "<!-- ctxd" not in t and not cf._open_fence(t)))
def test_round_trip_property(root, data_dir, original):
    f = root / "AGENTS.md"
    f.write_bytes(original.encode())
    cf.install("agents-md", str(root), data_dir)
    once = f.read_bytes()
    assert once.startswith(original.encode())
    cf.install("agents-md", str(root), data_dir)
    assert f.read_bytes() == once
    cf.uninstall("agents-md", str(root))
    assert f.read_bytes() == original.encode()


def test_a_moved_context_dir_updates_the_block_in_place(root, tmp_path):
    f = root / "CLAUDE.md"
    cf.install("claude-md", str(root), str(tmp_path / "old"))
    f.write_text("above\n\n" + f.read_text() + "\nbelow, written after ctxd's block\n")
    before = f.read_text()
    out = cf.install("claude-md", str(root), str(tmp_path / "new"))
    after = f.read_text()
    assert any("updated" in line for line in out)
    assert f"@{tmp_path}/new/context.md" in after and "/old/" not in after
    assert after.count("<!-- ctxd:begin") == 1
    head, tail = before.split("<!-- ctxd:begin")[0], before.split("<!-- ctxd:end -->")[1]
    assert after.startswith(head) and after.endswith(tail)
    assert "created" in after.splitlines()[2]  # the begin marker keeps what it recorded


def test_duplicate_blocks_collapse_into_one(root, data_dir):
    f = root / "AGENTS.md"
    cf.install("agents-md", str(root), data_dir)
    block = f.read_text()
    f.write_text("mine\n" + block + "between\n" + block)
    cf.install("agents-md", str(root), data_dir)
    text = f.read_text()
    assert text.count("<!-- ctxd:begin") == 1 and text.startswith("mine\n") and text.endswith("between\n")


def test_file_ctxd_created_is_deleted_on_uninstall_when_nothing_else_is_in_it(root, data_dir):
    out = cf.install("agents-md", str(root), data_dir)
    assert any("created" in line for line in out)
    assert cf.uninstall("agents-md", str(root))[0].startswith("ctxd: removed ")
    assert not (root / "AGENTS.md").exists()


def test_file_ctxd_created_but_the_user_wrote_in_is_kept(root, data_dir):
    f = root / "AGENTS.md"
    cf.install("agents-md", str(root), data_dir)
    f.write_text("# My rules\n\n" + f.read_text())
    cf.uninstall("agents-md", str(root))
    assert f.read_text() == "# My rules\n\n"


def test_an_empty_file_of_the_users_stays(root, data_dir):
    f = root / "GEMINI.md"
    f.write_text("")
    cf.install("gemini-md", str(root), data_dir)
    cf.uninstall("gemini-md", str(root))
    assert f.exists() and f.read_bytes() == b""


def test_uninstall_without_a_block_or_a_file_changes_nothing(root):
    assert "no such file" in cf.uninstall("claude-md", str(root))[0]
    assert not (root / "CLAUDE.md").exists()
    (root / "CLAUDE.md").write_text("mine\n")
    assert "no ctxd block" in cf.uninstall("claude-md", str(root))[0]
    assert (root / "CLAUDE.md").read_text() == "mine\n"


@pytest.mark.parametrize("broken", [
    "mine\n<!-- ctxd:begin sep=1 (managed by ctxd) -->\n@/x/context.md\n",  # no end marker
    "mine\n<!-- ctxd:end -->\n",  # an end without a begin
])
def test_a_damaged_block_is_refused_untouched(root, data_dir, broken):
    f = root / "CLAUDE.md"
    f.write_text(broken)
    with pytest.raises(ConfigError, match="nothing was changed"):
        cf.install("claude-md", str(root), data_dir)
    with pytest.raises(ConfigError):
        cf.uninstall("claude-md", str(root))
    assert f.read_text() == broken


def test_a_file_ending_inside_a_code_fence_is_refused(root, data_dir):
    f = root / "CLAUDE.md"
    f.write_text("# Mine\n```sh\nmake test\n")
    with pytest.raises(ConfigError, match="code block"):
        cf.install("claude-md", str(root), data_dir)
    assert f.read_text() == "# Mine\n```sh\nmake test\n"


def test_mode_and_symlink_are_kept(root, data_dir, tmp_path):
    real = root / "shared" / "AGENTS.md"  # a link out of the project is refused (test_trust_borrow.py)
    real.parent.mkdir()
    real.write_text("shared rules\n")
    os.chmod(real, 0o640)
    (root / "AGENTS.md").symlink_to(real)
    cf.install("agents-md", str(root), data_dir)
    assert (root / "AGENTS.md").is_symlink()
    assert real.read_text().startswith("shared rules\n\n<!-- ctxd:begin")
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    cf.uninstall("agents-md", str(root))
    assert real.read_text() == "shared rules\n"
    assert not [p for p in real.parent.iterdir() if p.name != "AGENTS.md"]  # no temp file left


def test_a_file_that_is_not_utf8_is_refused(root, data_dir):
    f = root / "CLAUDE.md"
    f.write_bytes(b"\xff\xfe caf\xe9\n")
    with pytest.raises(ConfigError, match="UTF-8"):
        cf.install("claude-md", str(root), data_dir)
    assert f.read_bytes() == b"\xff\xfe caf\xe9\n"


# -- the command ---------------------------------------------------------------------------

needs_cli = pytest.mark.skipif(CTXD is None, reason="the ctxd console script is not on PATH")


_ctxd = partial(ctxd, script=True)


@needs_cli
@pytest.mark.parametrize("kind", KINDS)
def test_cli_install_and_uninstall(root, kind):
    from ctxd.memory.project import locate

    (root / "src").mkdir()
    r = _ctxd("chat", "install", kind, cwd=root / "src")  # anywhere in the project: the root's file
    assert r.returncode == 0, r.stderr
    f = _file(root, kind)
    ctx_md = os.path.join(locate(str(root)).context_dir, "context.md")
    assert ctx_md in f.read_text() and ctx_md in r.stdout
    assert _ctxd("chat", "install", kind, cwd=root).stdout.startswith(f"ctxd: {cf.FILES[kind]} already points at")
    r = _ctxd("chat", "install", kind, "--uninstall", cwd=root)
    assert r.returncode == 0, r.stderr
    assert not f.exists()


@needs_cli
def test_cli_refuses_user_scope_and_reports_a_damaged_file(root):
    r = _ctxd("chat", "install", "claude-md", "--user", cwd=root)
    assert r.returncode == 2 and r.stderr.startswith("ctxd: ")
    (root / "CLAUDE.md").write_text("<!-- ctxd:begin sep=0 -->\n")
    r = _ctxd("chat", "install", "claude-md", cwd=root)
    assert r.returncode == 3 and "no end marker" in r.stderr and "Traceback" not in r.stderr
