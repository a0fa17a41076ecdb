""".env files and `ctxd export dotenv`, as people use them: a line that is not an assignment
is named in a warning (never dropped without a word), and what `ctxd export dotenv` writes
reads back exactly through python-dotenv as it is called by default (interpolating ${...})
and through ctxd's own [env] files."""

import io
import os

from hypothesis import given, settings, strategies as st

from ctxd.activation import dotenv_files, formats
from ctxdtest import ctxd


def test_a_bare_word_line_is_named_not_dropped(tmp_path):
    f = tmp_path / ".env"
    f.write_text("A=1\noops\nexport\nB=2\n")
    values, warnings, _ = dotenv_files.read(str(f), {})
    assert dict(values) == {"A": "1", "B": "2"}
    assert warnings == [f"ctxd: {f}:2: cannot parse 'oops' (skipped)",
                        f"ctxd: {f}:3: cannot parse 'export' (skipped)"]


def test_the_warning_reaches_the_user(tmp_path):
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / ".contextrc").write_text('[env]\nfiles = [".env"]\n')
    (proj / ".env").write_text("A=1\noops\n")
    assert ctxd("allow", str(proj), cwd=proj).returncode == 0
    p = ctxd("export", "json", str(proj), cwd=proj)
    assert p.returncode == 0 and '"A": "1"' in p.stdout
    assert f"ctxd: {proj / '.env'}:2: cannot parse 'oops' (skipped)" in p.stderr


def _reads_back(text):
    from dotenv import dotenv_values

    return dotenv_values(stream=io.StringIO(text))  # the default: ${...} interpolated


def test_export_dotenv_dollars_read_back_literally(tmp_path):
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / ".contextrc").write_text('[env]\nLIT = "$${HOME} and $$HOME and $${X:-y}"\n')
    assert ctxd("allow", str(proj), cwd=proj).returncode == 0
    p = ctxd("export", "dotenv", str(proj), cwd=proj)
    assert p.returncode == 0, p.stderr
    assert _reads_back(p.stdout)["LIT"] == "${HOME} and $HOME and ${X:-y}"
    (proj / "app.env").write_text(p.stdout)
    values, warnings, _ = dotenv_files.read(str(proj / "app.env"), dict(os.environ))
    assert dict(values)["LIT"] == "${HOME} and $HOME and ${X:-y}" and warnings == []


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("${}:-AB x\\\"'\n"), max_size=20))
def test_any_value_with_dollars_reads_back(value):
    assert _reads_back(f"NAME={formats.dotenv_value(value)}\n") == {"NAME": value}
