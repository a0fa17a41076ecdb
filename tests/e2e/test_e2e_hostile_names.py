"""The hooks keep working when the user has aliases and functions named like
the builtins and commands they use (defined before the hook is loaded, as in
an rc file): enter, a nested directory, an edited watched file, a warning,
leave, the fast leave, and the user's own wrappers still run.
"""

import os
import uuid

from e2ekit import comparable, output_lines, plain_dir, python_project
from shellkit import PROMPT, ShellSession

# Defined before `eval "$(ctxd hook ...)"`, so aliases are expanded in the
# hook's function bodies if it is not careful. Every one prints BROKEN-<name>
# (or fails) if the hook reaches it. Not here: `export` (bash, zsh) and `eval`
# themselves: `ctxd export` prints plain `export NAME=value` lines, a format
# other tools read, and the install line needs eval (fish: source, so the
# test installs with `builtin source` there).
HOSTILE = {
    "bash": [
        'function [ { echo BROKEN-[; return 1; }',
        "unset() { echo BROKEN-unset; }",
        "declare() { echo BROKEN-declare; }",
        "trap() { echo BROKEN-trap; }",
        # a user's cd wrapper must still work (and its output still show)
        'cd() { builtin cd "$@" && echo user-cd-ran; }',
        "alias test=false",
        "alias printf='echo BROKEN-printf'",
        "alias local='echo BROKEN-local'",
        "alias return='echo BROKEN-return'",
    ],
    "zsh": [
        "function [ { echo BROKEN-[; return 1 }",
        "unset() { echo BROKEN-unset }",
        "unfunction() { echo BROKEN-unfunction }",
        "trap() { echo BROKEN-trap }",
        "autoload() { echo BROKEN-autoload }",
        'cd() { builtin cd "$@" && echo user-cd-ran }',
        "alias test=false",
        "alias printf='echo BROKEN-printf'",
        "alias print='echo BROKEN-print'",
        "alias local='echo BROKEN-local'",
        "alias emulate='echo BROKEN-emulate'",
        "alias typeset='echo BROKEN-typeset'",
        "alias return='echo BROKEN-return'",
    ],
    "fish": [
        # fish reserves test, set, string, status, return, builtin, command:
        # these are the builtins a function can shadow (the test's own prompt
        # stops using printf first)
        f"function fish_prompt; echo -n '{PROMPT}'; end",
        "function printf; echo BROKEN-printf; end",
        "function path; echo BROKEN-path; end",
        "functions -c cd __user_orig_cd",
        "function cd; __user_orig_cd $argv; and echo user-cd-ran; end",
        # fish's autoloader itself runs `source` and `functions`: shadow them last
        "function source; echo BROKEN-source; end",
        "function functions; echo BROKEN-functions; end",
    ],
}


class Session(ShellSession):
    """A ShellSession whose end marker is printed by echo: printf is shadowed here."""

    def install_hook(self):
        if self.shell == "fish":  # the install line itself would run the user's `source`
            return self.run("ctxd hook fish | builtin source")
        return super().install_hook()

    def run(self, command, timeout=None):
        self._n += 1
        tag = f"{uuid.uuid4().hex[:8]}_{self._n}"
        end = f"__END_{tag}__"
        # the quotes split the marker in the echoed input, so only the output matches
        self.child.sendline(f'{command}\necho "__END_""{tag}__"')
        self.child.expect_exact(end, timeout=timeout or self.timeout)
        out = self.child.before
        self.child.expect_exact(PROMPT, timeout=timeout or self.timeout)
        lines = out.replace("\r\n", "\n").replace("\r", "").split("\n")
        kept = [l for l in lines if "__END_" not in l and PROMPT not in l and l.strip() != command.strip()]
        return "\n".join(kept).strip("\n")


def _user_defs(s):
    for line in HOSTILE[s.shell]:
        assert "BROKEN" not in s.run(line)


def _check(out):
    assert "BROKEN" not in out, out
    return out


def test_hooks_ignore_aliases_and_functions_named_like_builtins(shell, home, tmp_path):
    proj = python_project(tmp_path / "proj")
    os.makedirs(os.path.join(proj, "src"))
    with open(os.path.join(proj, ".contextrc"), "w") as f:
        f.write('[env]\nCT_HOSTILE = "in project"\n')
    out = plain_dir(tmp_path / "out")
    s = Session(shell, home, hook=False)
    try:
        _run_scenario(s, proj, out)
    finally:
        s.close()


def _run_scenario(s, proj, out):
    _user_defs(s)
    assert _check(s.install_hook()) == ""
    assert "user-cd-ran" in _check(s.cd(out))
    before = comparable(s.env_dump())

    # an untrusted .contextrc: a warning (printed by the export code) shows exactly
    text = _check(s.cd(proj))
    assert "user-cd-ran" in text
    warnings = [line for line in output_lines(text) if line.startswith("ctxd:")]
    assert len(warnings) == 1 and ".contextrc" in warnings[0], text
    env = s.env_dump()
    assert env["CTXD_ROOT"] == proj and env["VIRTUAL_ENV"] == os.path.join(proj, ".venv")
    assert "CT_HOSTILE" not in env

    assert "ctxd: allowed" in _check(s.run("ctxd allow"))
    env = s.env_dump()
    assert env["CT_HOSTILE"] == "in project"

    assert "user-cd-ran" in _check(s.cd(os.path.join(proj, "src")))
    assert comparable(s.env_dump()) == comparable(env)

    # an edit of a watched file: the watch check runs, the export applies it
    with open(os.path.join(proj, ".contextrc"), "w") as f:
        f.write('[env]\nCT_HOSTILE = "edited"\n')
    _check(s.run("ctxd allow"))
    assert s.env_dump()["CT_HOSTILE"] == "edited"

    # leaving: the fast leave (restore function, no ctxd) and a full export
    assert "user-cd-ran" in _check(s.cd(out))
    assert comparable(s.env_dump()) == before
    _check(s.cd(proj))
    assert s.env_dump()["CT_HOSTILE"] == "edited"
    _check(s.cd(out))
    assert comparable(s.env_dump()) == before
    assert s.status_after("false") == 1
    assert _check(s.run("echo alive")).endswith("alive")
