"""Real shells run non-interactively on a script with no user config, the way the hooks evaluate
ctxd's code, and values hard to quote: what the escaping and shell-text tests share
(tests/test_escaping*.py, tests/test_shell_text.py).

``eval_like_hook(shell, file)`` is the line that evaluates a file of ctxd's output exactly as the
shell's hook does; ``run_shell(shell, path, d, lines)`` runs lines in the scratch directory *d*;
``dump_env`` writes the exported environment to a file, ``read`` / ``read_env`` read it back as
bytes. ``VALUES``, ``PAYLOADS``, ``PATH_ENTRIES``, ``LOCALES`` and ``if_cases`` are hypothesis
strategies; a payload creates ``SENTINEL`` in the current directory if anything executes it.
"""

import os
import shutil
import subprocess
import tempfile
from contextlib import contextmanager

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

SENTINEL = "SENTINEL"

SETTINGS = settings(
    max_examples=70,
    deadline=None,
    # the autouse isolation fixture is function scoped; it only sets env vars
    # that stay the same for every example
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

ENV_BIN = shutil.which("env") or "/usr/bin/env"
CAT_BIN = shutil.which("cat") or "/bin/cat"
TOUCH_BIN = shutil.which("touch") or "/usr/bin/touch"

# --- strategies ---------------------------------------------------------------

# Characters that mean something to at least one of the shells, plus a few that
# are only awkward: C0/C1 controls, DEL, non-ASCII, fish's private-use range for
# raw bytes (U+F600..) and its reserved non-characters (U+FDD0..).
SPECIAL = list(
    "'\"\\$`!(){}[];|&<>*?~#%^=:,@+-. \t\n\r\x01\x08\x1b\x1f\x7f\x80\x85\x9f"
    "\u00a0\u00e9\u2028\u4e2d\ufeff\uf600\uf6ff\ufdd0\ufdd7\ufffe\U0001f600\U0010ffff"
    "xn0"
)

# Would create SENTINEL in the current directory if a shell executed them.
PAYLOADS = [
    f"$(touch {SENTINEL})",
    f"`touch {SENTINEL}`",
    f"; touch {SENTINEL}",
    f"'; touch {SENTINEL}; '",
    f"'; touch {SENTINEL}; #",
    f'"; touch {SENTINEL}; "',
    f"\ntouch {SENTINEL}\n",
    f"\rtouch {SENTINEL}\r",
    f"\\\ntouch {SENTINEL}",
    f"(touch {SENTINEL})",
    f"'(touch {SENTINEL})'",
    f"\\'; touch {SENTINEL}; \\'",
    f"\\'(touch {SENTINEL})\\'",
    f"'\\''; touch {SENTINEL}; '\\''",
    f"\\x27; touch {SENTINEL}; \\x27",
    f"$'\\x27'; touch {SENTINEL}",
    f"${{ touch {SENTINEL}; }}",
    f"${{X:-$(touch {SENTINEL})}}",
    f"$((`touch {SENTINEL}`))",
    f"\\$(touch {SENTINEL})",
    f"| touch {SENTINEL}",
    f"&& touch {SENTINEL}",
    f"& touch {SENTINEL} &",
    f"> {SENTINEL}",
    f"'>{SENTINEL}'",
    f"<(touch {SENTINEL})",
    f"=(touch {SENTINEL})",
    f"!(touch {SENTINEL})",
    f"$(\ntouch {SENTINEL}\n)",
    f"\\\\$(touch {SENTINEL})\\",
]

# Values some shell reads as an operator, a pattern, an expansion or an option.
TRICKY = [
    "", " ", "!", "(", ")", "!=", "=", "==", "-n", "-z", "-a", "-o", "-e", "-", "--",
    "[[", "]]", "*", "?", "[a]", "~", "~root", "=ls", "a:=ls", "/usr/bin:=ls", "a:~",
    "a=b", "%", "%1", "%s%d", "\\", "\\\\", "a\\", "'", '"', "$", "$$", "${X}", "$X",
    "\\x41", "\\n", "\\u00e9", "-\n", "\n", "\r\n", "\t", "!!", "!$", "{a,b}", "#x",
]

_chars = st.characters(exclude_categories=("Cs",), exclude_characters="\0")
any_text = st.text(_chars, max_size=40)
special_text = st.text(st.sampled_from(SPECIAL), max_size=30)
# undecodable bytes as os.environ / os.fsdecode hold them (lone \udc80..\udcff)
raw_text = st.binary(max_size=24).map(lambda b: os.fsdecode(b.replace(b"\0", b"")))
payload_text = st.builds(
    lambda a, p, b: a + p + b,
    st.text(st.sampled_from(SPECIAL), max_size=4),
    st.sampled_from(PAYLOADS),
    st.text(st.sampled_from(SPECIAL), max_size=4),
)
_atoms = st.one_of(any_text, special_text, raw_text, st.sampled_from(TRICKY), payload_text)
VALUES = st.one_of(_atoms, st.lists(_atoms, min_size=2, max_size=4).map("".join))


def _entry(s):
    return s.replace(":", "").replace("\0", "")


PATH_ENTRIES = st.lists(VALUES.map(_entry).filter(bool), min_size=1, max_size=6)
LOCALES = st.sampled_from(["C.UTF-8", "C"])


@st.composite
def if_cases(draw):
    """(actual, expected): actual None = unset; expected None = "must be unset"."""
    actual = draw(st.one_of(st.none(), st.just(""), VALUES))
    kind = draw(st.sampled_from(["same", "same", "other", "none", "empty"]))
    if kind == "same":
        expected = actual
    elif kind == "none":
        expected = None
    elif kind == "empty":
        expected = ""
    else:
        expected = draw(VALUES)
    return actual, expected


def holds(actual, expected):
    if expected is None or actual is None:
        return expected is None and actual is None
    return os.fsencode(actual) == os.fsencode(expected)


# --- running code in the real shell ---------------------------------------------

@contextmanager
def scratch():
    d = tempfile.mkdtemp(prefix="ctxd-esc-")
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def write_code(d, filename, code):
    # ctxd writes its output with surrogateescape (ctxd/fastpath/export_entry.py): do the same
    with open(os.path.join(d, filename), "wb") as f:
        f.write(code.encode("utf-8", "surrogateescape"))


def eval_like_hook(shell, filename):
    """The driver line that evaluates *filename* exactly as *shell*'s hook does."""
    if shell == "fish":
        return f"set -l _ctxd_out (command {CAT_BIN} ./{filename}); printf '%s\\n' $_ctxd_out | source"
    if shell in ("bash", "zsh"):
        return f'_ctxd_out=$({CAT_BIN} ./{filename}); eval "$_ctxd_out"'
    return {
        "tcsh": f"source ./{filename}",
        "elvish": f"eval &ns=$ctxd-ns (slurp < ./{filename})",  # the hook's namespace: see shell/ctxd.elv
        "xonsh": f"execx(open('./{filename}', encoding='utf-8', errors='surrogateescape').read(), 'exec', ctxd_ns)",
        "nu": f"_ctxd_apply (open --raw ./{filename})",  # the hook's own applier (shell/ctxd.nu)
    }[shell]


def dump_env(shell, out="env.out"):
    """The line that writes the exported environment to *out* (NUL-separated, as env -0)."""
    return f"^{ENV_BIN} -0 o> {out}" if shell == "nu" else f"{ENV_BIN} -0 > {out}"


# what the hook defines before it evaluates anything: elvish's eval namespace
# with the hook's three helpers (the same names as in shell/ctxd.elv)
PRELUDE = {
    "elvish": ["var ctxd-restore = $nil", "var flags = [&]",
               "var ctxd-ns = (ns [&ctxd-set-restore~={|f| set ctxd-restore = $f } "
               "&ctxd-drop-restore~={ set ctxd-restore = $nil } "
               "&ctxd-set-flag~={|n v| set flags = (assoc $flags $n $v) }])"],
    "xonsh": ["ctxd_ns = {}"],  # the hook's own namespace for ctxd's code: see shell/ctxd.xsh
}


def run_shell(shell, path, d, lines, env=None, locale="C.UTF-8"):
    """Run *lines* in a non-interactive *shell* (at *path*) with no user config, cwd *d*: bash, zsh
    and fish as one ``-c`` script (bash and zsh stop at the first error), the others from a
    driver file after what their hook defines first (PRELUDE; nu's real hook)."""
    base = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": d,
        "XDG_CONFIG_HOME": os.path.join(d, ".config"),
        "XDG_DATA_HOME": os.path.join(d, ".local/share"),
        "XDG_CACHE_HOME": os.path.join(d, ".cache"),
        "LANG": locale,
        "LC_ALL": locale,
    }
    if shell in ("bash", "zsh", "fish"):
        if shell == "bash":
            argv = [path, "--norc", "--noprofile", "-c"]
            lines = ["set -euo pipefail"] + lines
        elif shell == "zsh":
            argv = [path, "-f", "-c"]
            lines = ["set -eu"] + lines
        else:
            argv = [path, "--no-config", "-c"]
        base["fish_greeting"] = ""
        base.update(env or {})
        return subprocess.run(argv + ["\n".join(lines)], cwd=d, env=base, capture_output=True, timeout=60)
    lines = PRELUDE.get(shell, []) + lines
    if shell == "nu":  # the real hook, for its JSON applier and restore (nu cannot evaluate a string)
        from ctxd.activation.detectors import all_markers
        from ctxd.shells import get_shell
        from ctxd.shells.base import export_command

        with open(os.path.join(d, "ctxd-hook.nu"), "w", encoding="utf-8") as f:
            f.write(get_shell("nu").hook(all_markers(), export_command()))
        lines = ["source ./ctxd-hook.nu"] + lines
    script = os.path.join(d, "driver")
    with open(script, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    argv = {
        "tcsh": [path, "-f", script],
        "elvish": [path, "-norc", script],
        "xonsh": [path, "--no-rc", script],
        "nu": [path, "--no-config-file", "--no-std-lib", script],
    }[shell]
    base.update(env or {})
    return subprocess.run(argv, cwd=d, env=base, capture_output=True, timeout=120)


def read(d, name):
    try:
        with open(os.path.join(d, name), "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def read_env(d, name="env.out"):
    env = {}
    for item in read(d, name).split(b"\0"):
        if item:
            k, _, v = item.partition(b"=")
            env[k] = v
    return env


def explain(r):
    return f"rc={r.returncode} stdout={r.stdout!r} stderr={r.stderr!r}"
