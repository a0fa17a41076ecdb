"""[ctxd] inherit_root: a nested root gets the enclosing root's detected environment
behind its own (planner, parser and PATH order on a re-export), against real files."""

import pytest

from ctxd.activation import envdiff, trust
from ctxd.activation.contextrc import RcError, parse_bytes
from ctxd.activation.detectors import Plan
from ctxdtest import allow_all, plan_of, plan_sets, write_files


def monorepo(tmp_path, rc="[ctxd]\ninherit_root = true\n"):
    write_files(tmp_path, {"repo/package.json": "{}", "repo/.venv/bin/activate": "", "repo/pyproject.toml": "",
                           "repo/pkg/app/pyproject.toml": "", "repo/pkg/app/.venv/bin/activate": "",
                           "repo/pkg/app/.contextrc": rc})
    allow_all(tmp_path)
    return tmp_path / "repo", tmp_path / "repo/pkg/app"


def test_parse_inherit_root():
    assert parse_bytes("f", b"[ctxd]\ninherit_root = true\n")["inherit_root"] is True
    assert parse_bytes("f", b"")["inherit_root"] is None
    assert parse_bytes("f", b"[ctxd]\ninherit_root = true\n")["unknown"] == []
    with pytest.raises(RcError, match="'ctxd.inherit_root' must be true or false"):
        parse_bytes("f", b'[ctxd]\ninherit_root = "yes"\n')


def test_nested_entries_first_and_nested_values_win(tmp_path):
    repo, app = monorepo(tmp_path)
    plan = plan_of(app)
    assert [e for e, _ in plan.prepend] == [f"{app}/.venv/bin", f"{repo}/.venv/bin", f"{repo}/node_modules/.bin"]
    s = plan_sets(plan)
    target, _state = envdiff.apply({"PATH": "/usr/bin"}, plan)
    assert target["VIRTUAL_ENV"] == f"{app}/.venv"  # the parent's comes first in plan.sets, the root's wins
    assert s["NODE_ENV"] == ("development", f"node: package.json (inherited from {repo})")
    assert f"{repo}" in plan.watch  # its markers and entries appearing re-activate
    assert trust.root_files(str(repo))[1] in plan.watch  # and so does denying it
    assert plan.types == [("python", ["pyproject.toml"])]  # the root's own types only


def test_off_by_default_and_nearest_file_decides(tmp_path):
    repo, app = monorepo(tmp_path, rc="")
    assert [e for e, _ in plan_of(app).prepend] == [f"{app}/.venv/bin"]
    write_files(tmp_path, {"repo/pkg/.contextrc": "[ctxd]\ninherit_root = true\n",
                           "repo/pkg/app/.contextrc": "[ctxd]\ninherit_root = false\n"})
    allow_all(tmp_path)
    assert [e for e, _ in plan_of(app).prepend] == [f"{app}/.venv/bin"]


def test_untrusted_parent_is_not_inherited(tmp_path, isolated_paths):
    (isolated_paths / ".config/ctxd/config.toml").write_text("")  # no trusted trees
    repo, app = monorepo(tmp_path)
    plan = plan_of(app)
    assert [e for e, _ in plan.prepend] == [f"{app}/.venv/bin"]  # the root: trusted by its .contextrc
    assert [w for w in plan.warnings if "not inherited" in w] == [
        f"ctxd: {repo} is not trusted, so its detected environment is not inherited ([ctxd] inherit_root). "
        f"Run: ctxd allow {repo}"]
    trust.allow(str(repo))
    assert f"{repo}/node_modules/.bin" in [e for e, _ in plan_of(app).prepend]
    trust.deny(str(repo))
    assert f"{repo}/node_modules/.bin" not in [e for e, _ in plan_of(app).prepend]


def test_reexport_puts_a_new_entry_behind_the_kept_ones_before_it():
    def plan(entries):
        p = Plan("/p")
        for e in entries:
            p.path(e, "t")
        return p

    target, state = envdiff.apply({"PATH": "/usr/bin"}, plan(["/p/venv", "/repo/node"]))
    kept = set(state.path_added)
    base = envdiff.restore(target, state, keep_path=kept)
    again, state2 = envdiff.apply(base, plan(["/first", "/p/venv", "/repo/node", "/repo/bin"]), kept=kept)
    assert again["PATH"] == "/first:/p/venv:/repo/node:/repo/bin:/usr/bin"
    assert envdiff.restore(again, state2)["PATH"] == "/usr/bin"
