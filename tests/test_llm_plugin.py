"""The ctxd: fragment loader, loaded by the real llm package.

llm is a test dependency (the `test` extra): these tests go through llm's own
plugin loading (the `llm` entry point group of the installed ctxd), its CLI and
its fragment resolution and storage, in an isolated LLM_USER_PATH. llm ships
no offline model, so a test-only plugin registers an echo model
(`ctxd-test-echo`, it answers with the prompt it was given, fragments
included); the CLI runs as a separate process with that module registered
before llm's own plugin loading.
"""

import json
import os
import subprocess
import sys
import textwrap
from importlib import metadata

import llm  # the test extra installs it: pip install -e '.[test]'
import pytest

ECHO_PLUGIN = '''
import llm

class Echo(llm.Model):
    model_id = "ctxd-test-echo"
    can_stream = False

    def execute(self, prompt, stream, response, conversation):
        yield prompt.prompt

@llm.hookimpl
def register_models(register):
    register(Echo())
'''

RUNNER = '''
import sys
sys.path.insert(0, {here!r})
import llm.plugins
import ctxd_test_echo
llm.plugins.pm.register(ctxd_test_echo, name="ctxd-test-echo")
from llm.cli import cli
cli()
'''

TURNS = [
    ("user", "The cutover deadline is 2026-04-12 and the budget is at most 4000 EUR."),
    ("assistant", "Noted: cutover on 2026-04-12, budget capped at 4000 EUR."),
    ("user", "We run Postgres 16.2 on db-prod-3; never restart it during business hours."),
]


@pytest.fixture(autouse=True)
def llm_home(tmp_path, monkeypatch):
    home = tmp_path / "llm-user"
    monkeypatch.setenv("LLM_USER_PATH", str(home))
    monkeypatch.delenv("LLM_LOAD_PLUGINS", raising=False)
    return home


@pytest.fixture
def project(tmp_path):
    from ctxd.memory.context import render
    from ctxd.memory.project import locate, open_store

    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / "src").mkdir()
    p = locate(str(root))
    with open_store(p) as store:
        for role, text in TURNS:
            store.add(role, text)
        render.write(store, p.root)
    return root


def add_turn(root, role, text):
    from ctxd.memory.project import locate, open_store

    with open_store(locate(str(root))) as store:
        return store.add(role, text)


@pytest.fixture
def echo_llm(tmp_path):
    """argv prefix running llm's CLI with the test echo model registered."""
    here = tmp_path / "llm-test-plugin"
    here.mkdir()
    (here / "ctxd_test_echo.py").write_text(textwrap.dedent(ECHO_PLUGIN))
    (here / "run_llm.py").write_text(RUNNER.format(here=str(here)))
    return [sys.executable, str(here / "run_llm.py")]


def run(argv, cwd=None):
    return subprocess.run(argv, capture_output=True, text=True, cwd=cwd, timeout=120)


LLM = [sys.executable, "-m", "llm"]


def stored_fragments():
    r = run(LLM + ["fragments", "list", "--json"])
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


# -- registration -----------------------------------------------------------------------------

def test_ctxd_declares_the_llm_entry_point():
    eps = {ep.name: ep.value for ep in metadata.entry_points(group="llm")}
    assert eps.get("ctxd") == "ctxd.integrations.llm_plugin", (
        "ctxd's llm entry point is not installed: re-install with pip install -e '.[test]'")


def test_llm_plugins_lists_ctxd():
    r = run(LLM + ["plugins"])
    assert r.returncode == 0, r.stderr
    plugins = {p["name"]: p for p in json.loads(r.stdout)}
    assert plugins["ctxd"]["hooks"] == ["register_fragment_loaders"]


def test_llm_fragments_loaders_documents_the_prefix():
    r = run(LLM + ["fragments", "loaders"])
    assert r.returncode == 0, r.stderr
    assert "ctxd:" in r.stdout and "budget=N" in r.stdout and "mode=" in r.stdout


def test_importing_ctxd_never_imports_llm():
    code = ("import sys, ctxd, ctxd.integrations.install, ctxd.integrations.contextfiles, "
            "ctxd.commands.context, ctxd.memory.context.engine; assert 'llm' not in sys.modules, 'llm imported'")
    r = run([sys.executable, "-c", code])
    assert r.returncode == 0, r.stderr


# -- through llm's CLI ---------------------------------------------------------------------------

def test_llm_prompt_gets_the_context_as_fragments(project, echo_llm):
    r = run(echo_llm + ["prompt", "-m", "ctxd-test-echo", "-f", "ctxd:.", "when is the cutover?"], cwd=project / "src")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    for _role, text in TURNS:
        assert text in out
    assert out.rstrip().endswith("when is the cutover?")  # the fragments come first, then the question
    sources = {f["source"] for f in stored_fragments()}
    assert {f"ctxd:{project}#turn-{i}" for i in (1, 2, 3)} <= sources


def test_hybrid_mode_sends_the_facts_as_their_own_fragment(project, echo_llm):
    r = run(echo_llm + ["-m", "ctxd-test-echo", "-f", f"ctxd:{project}?mode=hybrid", "what is the budget?"],
            cwd=project.parent)
    assert r.returncode == 0, r.stderr
    facts = [f for f in stored_fragments() if f["source"] == f"ctxd:{project}#facts"]
    assert len(facts) == 1
    assert facts[0]["content"].startswith("Facts to keep")
    assert "2026-04-12" in facts[0]["content"] and "4000 EUR" in facts[0]["content"]
    assert "never restart it during business hours" in facts[0]["content"]


def test_turns_are_stored_once_across_questions(project, echo_llm):
    ask = echo_llm + ["-m", "ctxd-test-echo", "-f", "ctxd:."]
    assert run(ask + ["first"], cwd=project).returncode == 0
    assert run(ask + ["second"], cwd=project).returncode == 0
    new_id = add_turn(project, "user", "Move the cutover to 2026-04-19.")
    r = run(ask + ["third"], cwd=project)
    assert r.returncode == 0, r.stderr
    assert "Move the cutover to 2026-04-19." in r.stdout
    turns = [f["source"] for f in stored_fragments() if "#turn-" in f["source"]]
    assert sorted(turns) == sorted(f"ctxd:{project}#turn-{i}" for i in (1, 2, 3, new_id))  # each once


def test_a_project_without_a_conversation_is_a_clear_error(tmp_path, echo_llm):
    empty = tmp_path / "empty"
    (empty / ".git").mkdir(parents=True)
    r = run(echo_llm + ["-m", "ctxd-test-echo", "-f", f"ctxd:{empty}", "hi"])
    assert r.returncode == 1
    assert f"Could not load fragment ctxd:{empty}: no conversation recorded for {empty} yet" in r.stderr
    assert "Traceback" not in r.stderr


# -- through llm's Python API -------------------------------------------------------------------

@pytest.fixture
def logs_db():
    import sqlite_utils
    from llm.migrations import migrate

    db = sqlite_utils.Database(memory=True)
    migrate(db)
    return db


@pytest.mark.parametrize("arg, message", [
    ("ctxd:{root}?colour=blue", "unknown option 'colour'"),
    ("ctxd:{root}?budget=lots", "budget must be a whole number"),
    ("ctxd:{root}?mode=verbose", "mode must be one of"),
    ("ctxd:{root}/no-such-dir", "no such directory"),
])
def test_bad_arguments_are_reported(project, logs_db, arg, message):
    from llm.cli import FragmentNotFound, resolve_fragments

    with pytest.raises(FragmentNotFound, match=f"Could not load fragment ctxd:.*{message}"):
        resolve_fragments(logs_db, [arg.format(root=project)])


def test_get_fragment_loaders_and_resolve_fragments(project, logs_db, monkeypatch):
    from llm.cli import resolve_fragments

    loaders = llm.get_fragment_loaders()
    assert "ctxd" in loaders
    monkeypatch.chdir(project / "src")
    frags = resolve_fragments(logs_db, ["ctxd:?mode=hybrid&budget=4000"])
    assert all(isinstance(f, llm.Fragment) for f in frags)
    by_source = {f.source: str(f) for f in frags}
    assert f"ctxd:{project}#facts" in by_source
    assert "Postgres 16.2" in by_source[f"ctxd:{project}#facts"]
    assert by_source[f"ctxd:{project}#turn-3"].endswith(TURNS[2][1])
    # the budget is honoured: a tiny one keeps fewer turns than a large one
    small = loaders["ctxd"](f"{project}?mode=long&budget=64")
    large = loaders["ctxd"](f"{project}?mode=long&budget=8000")
    assert 2 <= len(small) <= len(large) == 3


def test_parse_argument():
    from ctxd.integrations.llm_plugin import parse_argument

    assert parse_argument("") == (None, {})
    assert parse_argument(".") == (None, {})
    assert parse_argument("?budget=100") == (None, {"budget": 100})
    assert parse_argument("~/x?mode=summary") == (os.path.expanduser("~/x"), {"mode": "summary"})
    assert parse_argument("/a/what?") == ("/a/what", {})
    assert parse_argument("/a/why?not") == ("/a/why?not", {})  # not options: part of the path
    with pytest.raises(ValueError, match="budget or model"):
        parse_argument(".?budget=100&model=gpt-4o")
    with pytest.raises(ValueError, match="at least 64"):
        parse_argument(".?budget=10")


def test_q_recalls_the_turns_that_answer_it(project, echo_llm):
    for i in range(40):  # push the planted turns out of the recent window
        add_turn(project, "user", f"filler turn {i} about the weather and lunch")
    r = run(echo_llm + ["-m", "ctxd-test-echo", "-f", f"ctxd:{project}?budget=300&q=when+is+the+cutover",
                        "when?"], cwd=project.parent)
    assert r.returncode == 0, r.stderr
    query = [f for f in stored_fragments() if f["source"] == f"ctxd:{project}#query"]
    assert len(query) == 1 and "2026-04-12" in query[0]["content"]
