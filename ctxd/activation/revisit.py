"""The revisit cache: entering a project again applies without ctxd.

When an export enters a project, the code it prints is a pure function of
the shell's environment (the variables it may touch, PATH, ctxd's state,
the directories ctxd's own paths and version managers come from, the
variables a trusted .contextrc or .env file expands) and of the files the
activation watches. The hooks keep that code per root in a non-exported
shell variable (a new shell starts empty) together with a test, made here,
that those variables hold exactly the values they had when it was printed.
Back in the same root, with the test true and the watched files unchanged
(the CTXD_WATCH stamps the hooks compare anyway), the hook evaluates the
stored code: what ctxd would print again, without starting it. Anything
else (a user's own change to PATH or to a variable the project sets since,
an edited .contextrc, new trust, another branch) fails the test or the stamp
check, and ctxd runs as before.

Never cached: activations with on_enter or on_leave commands (they must
run), and the transition out of a project with on_leave commands.
Standard library only (the hot path).
"""

from ctxd.activation.state import STATE_VAR, TOLD_VAR, WATCH_VAR

# Read by the planner or by what it runs through (ctxd.paths, trust, config,
# direnv's state); every variable named like a tool's directory is checked too
# (NVM_DIR, PYENV_ROOT, ASDF_DATA_DIR, VOLTA_HOME, ...: where pins are looked up).
ALWAYS = ("HOME", "PATH", STATE_VAR, WATCH_VAR, "DIRENV_DIFF", "DIRENV_DIR", "DIRENV_WATCHES")
SUFFIXES = ("_DIR", "_HOME", "_ROOT", "_PREFIX", "_PATH")


def cacheable(t):
    """Whether the code for transition *t* may be replayed by the hook."""
    if not (t.state and t.plan) or t.plan.on_enter or t.plan.on_leave or t.state.leave:
        return False
    if t.old and t.old.root == t.state.root:
        return False  # a re-export inside: the hook looks entries up only when the root changes
    return not (t.old and t.old.leave)


def needed_files():
    """Files the replay needs to exist: the interpreter and this ctxd (once
    uninstalled, entering a project must not bring an old activation back)."""
    import os
    import sys

    return [sys.executable, os.path.abspath(__file__)]


def check_pairs(environ, t, names):
    """[(name, value or None)] the replay test compares, or None when *t* cannot be cached."""
    if not cacheable(t):
        return None
    refs = referenced(t.plan)
    if refs is None:
        return None
    want = set(names) | set(ALWAYS) | refs
    want.update(n for n in environ if n.endswith(SUFFIXES))
    # TOLD_VAR is never restored: leaving keeps the value this export gives it, and
    # the replay is right for a shell that was told (the code shows the notices only
    # while their keys are not in it, see Shell.warn_unless_listed)
    after = {TOLD_VAR: t.target.get(TOLD_VAR)}
    # only names a shell can test (an environment may hold others; none of ctxd's)
    return [(n, after[n] if n in after else environ.get(n)) for n in sorted(want) if n.isascii() and n.isidentifier()]


def referenced(plan):
    """Names any ${NAME} in a file the plan's values come from may expand (a
    .contextrc, an [env] files entry); None when one cannot be read. More
    names than needed only make the test longer (or, for a name the shell has
    as an unexported variable, fail it: ctxd then runs, as without the cache)."""
    import os

    # the .contextrc files, and the files values came from ([env] files): not every
    # watched file (a venv's activate script names PS1, which the shell has unexported)
    paths = [p for p, _status, _err in plan.files]
    paths += [s[2] for s in plan.sets if len(s) > 2 and isinstance(s[2], str) and s[2].startswith("/")]
    found = set()
    for path in dict.fromkeys(paths):
        try:
            if not os.path.isfile(path):
                continue
            with open(path, "rb") as f:
                data = f.read(1 << 20)
        except FileNotFoundError:
            continue
        except OSError:
            return None
        if b"$" in data:
            found.update(dollar_names(data.decode("utf-8", "replace")))
    return found


def dollar_names(text):
    """Every NAME after a ``$`` (``${NAME}``, ``${NAME:-x}``, ``$NAME``) in *text*."""
    out = set()
    i = text.find("$")
    while i != -1:
        j = i + 1
        if j < len(text) and text[j] == "{":
            j += 1
        k = j
        while k < len(text) and (text[k] == "_" or text[k].isalnum()) and text[k].isascii():
            k += 1
        if k > j:
            out.add(text[j:k])
        i = text.find("$", max(k, i + 1))
    return out
