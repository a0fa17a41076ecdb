"""The .contextrc schema, trust store and planner, against real files."""

import subprocess

import pytest

from ctxd.activation import contextrc, trust
from ctxd.activation.contextrc import RcError, expand, parse_bytes
from ctxd.activation.fileio import sha256_hex
from ctxdtest import allow_all, ctxd, plan_of, plan_sets, write_files

FULL = b'''
[ctxd]
inherit = false
[env]
A = "x"
B = false
C = 3
D = 1.5
[path]
prepend = ["bin", "~/tools"]
append = "late"
[detect]
node = false
[hooks]
on_enter = "echo in"
on_leave = ["echo a", "echo b"]
timeout = 2
[branch."release/*".env]
AWS_PROFILE = "prod"
[branch."release/*".path]
prepend = ["rel"]
[context]
store = "project"
model = "gpt-4o"
budget = 8000
'''


def test_full_schema_parses():
    p = parse_bytes("f", FULL)
    assert p["inherit"] is False
    assert p["env"] == [["A", "x"], ["B", None], ["C", "3"], ["D", "1.5"]]
    assert p["path"] == {"prepend": ["bin", "~/tools"], "append": ["late"]}
    assert p["detect"] == {"node": False}
    assert p["hooks"] == {"on_enter": ["echo in"], "on_leave": ["echo a", "echo b"], "timeout": 2.0}
    assert p["branch"] == [["release/*", {"env": [["AWS_PROFILE", "prod"]],
                                          "path": {"prepend": ["rel"], "append": []}}]]
    assert p["context"] == {"store": "project", "model": "gpt-4o", "budget": 8000}
    assert p["unknown"] == []


@pytest.mark.parametrize("text,where,what", [
    (b"a = \n", "1:5", "Invalid value"),
    (b"[env]\nA = [1]\n", "2:5", "'env.A' must be a string, a number, or false"),
    (b"[env]\nA = true\n", "2:5", "must be a string"),
    (b'[env]\n"A B" = "x"\n', "2:", "not a valid environment variable name"),
    (b"[path]\nprepend = [\"a:b\"]\n", "2:", "must be a list of non-empty paths"),
    (b"[detect]\nnode = 1\n", "2:", "'detect.node' must be true or false"),
    (b"[hooks]\ntimeout = 0\n", "2:", "'hooks.timeout'"),
    (b"[hooks]\non_enter = 5\n", "2:", "'hooks.on_enter'"),
    (b"[context]\nstore = \"cloud\"\n", "2:", "'context.store'"),
    (b"[context]\nbudget = -1\n", "2:", "'context.budget'"),
    (b"env = 1\n", "1:", "'env' must be a table"),
    (b"\n\n[env]\nA = 1\n[env]\n", "5:", "Cannot declare"),
    (b"\xff\xfe", "1:1", "not UTF-8"),
])
def test_errors_are_one_line_with_location(text, where, what):
    with pytest.raises(RcError) as e:
        parse_bytes("/p/.contextrc", text)
    msg = e.value.message
    assert msg.startswith(f"/p/.contextrc:{where}") and what in msg and "\n" not in msg
    assert e.value.exit_code == 3


def test_unknown_keys_are_named():
    p = parse_bytes("f", b"colour = 1\n[env]\n[hooks]\nbefore = 'x'\n[context]\nwindow = 3\n")
    assert p["unknown"] == ["colour", "hooks.before", "context.window"]


@pytest.mark.parametrize("value,expected", [
    ("${HOME}/x", "/h/x"), ("~/x", "/h/x"), ("~", "/h"), ("a~/x", "a~/x"),
    ("${MISSING}", ""), ("${MISSING:-dflt}", "dflt"), ("${EMPTY:-dflt}", "dflt"), ("$$HOME", "$HOME"),
    ("$HOME", "$HOME"), ("${UNCLOSED", "${UNCLOSED"), ("$(touch x)", "$(touch x)"), ("`x`", "`x`"),
])
def test_expand(value, expected):
    assert expand(value, {"HOME": "/h", "EMPTY": ""}, "/h") == expected


def test_trust_is_by_content_and_deny_survives_edits(tmp_path):
    rc = tmp_path / ".contextrc"
    rc.write_text("[env]\nA='1'\n")
    sha = sha256_hex(rc.read_bytes())
    assert trust.file_status(str(rc), sha) == trust.UNTRUSTED
    trust.allow(str(rc), sha)
    assert trust.file_status(str(rc), sha) == trust.ALLOWED
    assert trust.file_status(str(rc), sha256_hex(b"edited")) == trust.CHANGED
    trust.deny(str(rc))
    assert trust.file_status(str(rc), sha) == trust.DENIED
    assert trust.file_status(str(rc), sha256_hex(b"edited")) == trust.DENIED
    trust.allow(str(rc), sha)
    assert trust.file_status(str(rc), sha) == trust.ALLOWED
    for d in ("allow", "deny"):
        for f in (tmp_path.parent.glob("**/trust/" + d + "/*")):
            assert oct(f.stat().st_mode & 0o777) == "0o600"


def test_trust_keyed_by_real_path(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    trust.allow(str(tmp_path / "link"))
    assert trust.dir_allowed(str(tmp_path / "real"))


def test_trusted_tree_requires_ownership_and_containment(tmp_path):
    (tmp_path / "work/p").mkdir(parents=True)
    (tmp_path / "workshop").mkdir()
    assert trust.under_trusted_tree(str(tmp_path / "work/p"), [str(tmp_path / "work")])
    assert trust.under_trusted_tree(str(tmp_path / "work"), [str(tmp_path / "work")])
    assert not trust.under_trusted_tree(str(tmp_path / "workshop"), [str(tmp_path / "work")])
    assert not trust.under_trusted_tree("/etc", [str(tmp_path / "work")])


def test_inheritance_nearest_wins_and_stop(tmp_path):
    write_files(tmp_path, {".contextrc": '[env]\nA = "1"\nB = "1"\n[path]\nprepend = ["pbin"]\n',
                           "child/.contextrc": '[env]\nB = "2"\nC = "${A}-${B}"\n[path]\nprepend = ["cbin"]\n',
                           "child/pyproject.toml": ""})
    allow_all(tmp_path)
    plan = plan_of(tmp_path / "child")
    s = plan_sets(plan)
    assert s["A"] == ("1", str(tmp_path / ".contextrc"))
    assert s["B"] == ("2", str(tmp_path / "child/.contextrc"))
    assert s["C"][0] == "1-2"
    assert [e for e, _ in plan.prepend] == [str(tmp_path / "child/cbin"), str(tmp_path / "pbin")]
    (tmp_path / "child/.contextrc").write_text('[ctxd]\ninherit = false\n[env]\nB = "2"\n')
    allow_all(tmp_path)
    assert "A" not in plan_sets(plan_of(tmp_path / "child"))


def test_untrusted_layer_applies_nothing_and_says_so_once(tmp_path):
    write_files(tmp_path, {".contextrc": '[env]\nA = "1"\n', "child/.contextrc": '[env]\nB = "2"\n'})
    trust.allow(str(tmp_path / ".contextrc"), sha256_hex((tmp_path / ".contextrc").read_bytes()))
    plan = plan_of(tmp_path / "child")
    assert "B" not in plan_sets(plan) and plan_sets(plan)["A"][0] == "1"
    assert [w for w in plan.warnings if "not trusted" in w] == [
        f"ctxd: {tmp_path}/child/.contextrc is not trusted, so nothing in it applies. "
        f"Review it, then run: ctxd allow {tmp_path}/child"]
    assert plan.status.endswith("!blocked")


def test_invalid_trusted_file_applies_nothing_at_all(tmp_path):
    write_files(tmp_path, {".contextrc": '[env]\nA = "1"\n', "pyproject.toml": "", ".venv/bin/activate": ""})
    allow_all(tmp_path)
    (tmp_path / ".contextrc").write_text('[env]\nA = [\n')
    plan = plan_of(tmp_path)
    assert set(plan_sets(plan)) == {"CTXD_ROOT", "CTXD_TYPES", "CTXD_CONTEXT_DIR", "CTXD_STATUS"}
    assert plan.prepend == []
    assert any(w.startswith(f"ctxd: {tmp_path}/.contextrc:") for w in plan.warnings)
    assert plan.status.endswith("!error")


def test_untrusted_root_withholds_detected_environment(tmp_path, isolated_paths):
    (isolated_paths / ".config/ctxd/config.toml").write_text("")  # no trusted trees
    write_files(tmp_path, {"pyproject.toml": "", ".venv/bin/activate": ""})
    plan = plan_of(tmp_path)
    assert "VIRTUAL_ENV" not in plan_sets(plan) and plan.prepend == []
    assert any("is not trusted, so its detected environment (python) is not applied" in w for w in plan.warnings)
    trust.allow(str(tmp_path))
    assert plan_sets(plan_of(tmp_path))["VIRTUAL_ENV"][0] == str(tmp_path / ".venv")
    trust.deny(str(tmp_path))
    assert "VIRTUAL_ENV" not in plan_sets(plan_of(tmp_path))
    trust.revoke(str(tmp_path))
    trust.add_tree(str(tmp_path))
    assert "VIRTUAL_ENV" in plan_sets(plan_of(tmp_path))


def test_branch_sections_and_detect_toggle(tmp_path):
    write_files(tmp_path, {".contextrc": '[detect]\nnode = false\n[env]\nP = "base"\n'
                                         '[branch."feat/*".env]\nP = "feat"\n', "package.json": "{}"})
    allow_all(tmp_path)
    subprocess.run(["git", "init", "-q", "-b", "main", str(tmp_path)], check=True)
    plan = plan_of(tmp_path)
    assert plan_sets(plan)["P"][0] == "base" and plan.branch == "main"
    assert plan.types == [] and plan.prepend == []
    assert str(tmp_path / ".git/HEAD") in plan.watch
    (tmp_path / ".git/HEAD").write_text("ref: refs/heads/feat/login\n")
    plan = plan_of(tmp_path)
    assert plan_sets(plan)["P"] == ("feat", f'{tmp_path}/.contextrc [branch."feat/*"]')


def test_context_store_project(tmp_path):
    write_files(tmp_path, {".contextrc": '[context]\nstore = "project"\n'})
    allow_all(tmp_path)
    assert plan_sets(plan_of(tmp_path))["CTXD_CONTEXT_DIR"][0] == str(tmp_path / ".ctxd")


def test_parse_cache_is_keyed_by_content(tmp_path):
    rc = tmp_path / ".contextrc"
    rc.write_text('[env]\nA = "1"\n')
    assert contextrc.load(str(rc))[0]["env"] == [["A", "1"]]
    rc.write_text('[env]\nA = "2"\n')
    assert contextrc.load(str(rc))[0]["env"] == [["A", "2"]]


def test_enter_leave_commands_output_failure_and_timeout(tmp_path):
    from ctxd.activation import enter_leave

    lines = enter_leave.run(["echo out; echo err >&2", "exit 3", "sleep 30 & sleep 30"], {"PATH": "/usr/bin:/bin"},
                      str(tmp_path), 0.5, "on_enter")
    assert lines[:2] == ["out", "err"]
    assert lines[2] == "ctxd: on_enter failed (exit 3): exit 3"
    assert lines[3].startswith("ctxd: on_enter timed out after 0.5s")


def test_allow_refuses_invalid_file_and_init_writes_valid_allowed_template(tmp_path):
    write_files(tmp_path, {"pyproject.toml": "", "package.json": "{}"})
    p = ctxd("init", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    text = (tmp_path / ".contextrc").read_text()
    assert "python, node" in text
    assert trust.file_status(str(tmp_path / ".contextrc"), sha256_hex(text.encode())) == trust.ALLOWED
    assert ctxd("init", cwd=tmp_path).returncode == 1
    (tmp_path / ".contextrc").write_text("[env\n")
    p = ctxd("allow", cwd=tmp_path)
    assert p.returncode == 3 and p.stderr.startswith(f"ctxd: {tmp_path}/.contextrc:1:")
    assert trust.file_status(str(tmp_path / ".contextrc"), sha256_hex(b"[env\n")) == trust.CHANGED


def test_edit_validates_then_allows(tmp_path):
    editor = tmp_path / "ed.sh"
    editor.write_text('#!/bin/sh\nprintf \'[env]\\nE = "1"\\n\' > "$1"\n')
    editor.chmod(0o755)
    write_files(tmp_path, {"Makefile": ""})
    p = ctxd("edit", cwd=tmp_path, extra_env={"EDITOR": str(editor), "VISUAL": str(editor)}, input="")
    assert p.returncode == 0, p.stderr
    data = (tmp_path / ".contextrc").read_bytes()
    assert trust.file_status(str(tmp_path / ".contextrc"), sha256_hex(data)) == trust.ALLOWED
    editor.write_text("#!/bin/sh\nprintf 'E = [' > \"$1\"\n")
    p = ctxd("edit", cwd=tmp_path, extra_env={"EDITOR": str(editor), "VISUAL": str(editor)}, input="")
    assert p.returncode == 3
    assert p.stderr.count("ctxd:") == 1 and "(not allowed)" in p.stderr


def test_status_json(tmp_path):
    write_files(tmp_path, {"Cargo.toml": ""})
    import json

    info = json.loads(ctxd("status", "--json", cwd=tmp_path).stdout)
    assert info["status"] == f"{tmp_path.name} (rust)" and info["types"] == ["rust"]
    assert ctxd("status", cwd=tmp_path).stdout.strip() == f"{tmp_path.name} (rust)"
