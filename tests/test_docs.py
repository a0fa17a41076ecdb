"""The README stays a front page and its links and test command hold; docs/ is the manual (issue 25).

mkdocs itself (`mkdocs build --strict`, run by .ci/run) checks the links between docs pages and
their anchors; these tests check what mkdocs does not see: the README."""

import os
import re
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(REPO, "README.md")


def _read(*parts):
    with open(os.path.join(REPO, *parts), encoding="utf-8") as f:
        return f.read()


def slug(heading):
    """The anchor mkdocs (Python-Markdown's toc) gives a heading."""
    text = re.sub(r"[`*]", "", heading).strip().lower()
    text = re.sub(r"[^\w\s-]", "", text)
    return re.sub(r"[-\s]+", "-", text).strip("-")


def anchors(path):
    out, fence = set(), False
    for line in _read(path).splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence and re.match(r"#{1,6} ", line):
            out.add(slug(line.lstrip("#")))
    return out


def test_slug_matches_mkdocs_for_the_headings_linked_to():
    assert slug("Provenance: only what a human typed is the user's") == "provenance-only-what-a-human-typed-is-the-users"
    assert slug("`.env` files") == "env-files"


def test_readme_is_a_front_page():
    text = _read("README.md")
    assert len(text.splitlines()) <= 250
    for heading in ("## Install", "## Quick start: the environment", "## Quick start: the AI side", "## Tests"):
        assert heading in text.splitlines(), heading


def test_readme_links_name_files_and_headings_that_exist():
    links = re.findall(r"\]\(([^)\s]+)\)", _read("README.md"))
    local = [link for link in links if not re.match(r"[a-z]+://", link)]
    assert len(local) > 10
    for link in local:
        path, _, anchor = link.partition("#")
        assert os.path.exists(os.path.join(REPO, path)), link
        if anchor:
            assert anchor in anchors(path), link


def test_every_docs_page_is_in_the_nav():
    nav = _read("mkdocs.yml")
    pages = sorted(f for f in os.listdir(os.path.join(REPO, "docs")) if f.endswith(".md"))
    assert "index.md" in pages
    for page in pages:
        assert re.search(rf":\s+{re.escape(page)}\s*$", nav, re.M), f"docs/{page} is not in mkdocs.yml's nav"


def test_the_test_command_is_the_one_ci_runs_and_uses_a_venv():
    """.ci/run reads the line two after the marker; the command must not pip-install into the system
    Python, which PEP 668 refuses on a stock Debian/Ubuntu (the README says why it uses a venv)."""
    ci = subprocess.run(["awk", "/<!-- test-command -->/{getline; getline; print; exit}", README],
                        capture_output=True, text=True, check=True).stdout.strip()
    assert ci.startswith("python3 -m venv .test-venv && .test-venv/bin/pip install -e '.[test]'"), ci
    assert "python3 -m pip install" not in ci
    assert 'PATH="$PWD/.test-venv/bin:$PATH"' in ci  # the tests run `ctxd` from PATH
    assert "awk '/<!-- test-command -->/{getline; getline; print; exit}' README.md" in _read(".ci", "run")


def test_the_install_commands_do_not_need_ctxd_on_path():
    """A fresh account has no ~/.local/bin on PATH right after `pipx install`: the README's second
    set-up command names ctxd by its path (ctxd setup --write then puts that directory on PATH)."""
    block = re.search(r"## Install\n.*?```sh\n(.*?)```", _read("README.md"), re.S).group(1).splitlines()
    assert block == ["pipx install .", '~/.local/bin/ctxd setup --write && exec "$SHELL"']
