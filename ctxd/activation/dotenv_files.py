"""`.env` files a trusted `.contextrc` lists in ``[env] files = [...]``.

Parsed with python-dotenv (the field's standard syntax: ``export`` prefixes,
single/double quotes, multi-line quoted values, ``#`` comments, ``${VAR}`` and
``${VAR:-default}``), which is imported only here and only when a file is not
in the parse cache yet: the hot path never loads it for a project without
``files``, and a revisit of an unchanged `.env` reads the cached parse (keyed by
the file's bytes, like the `.contextrc`'s) without loading it at all.

Bad input, decided like python-dotenv itself (which logs "could not parse
statement starting at line N" and loads the rest):

- a line that does not parse: one ``ctxd: FILE:LINE: what`` warning, the line
  skipped, every valid line applied;
- a name that is not a valid environment variable name (``FOO-BAR=1``), a
  value holding a NUL byte, or ``PATH`` (ctxd owns PATH: ``[path]`` in the
  `.contextrc` says what goes on it): the same kind of warning, that line skipped;
- a name that makes a shell run code (``PROMPT_COMMAND``, ``PS1``, ``BASH_ENV``, zsh's
  ``precmd_functions`` ...) or every program load code (``LD_PRELOAD``, ``DYLD_*``): the same
  kind of warning, that line skipped. A `.env` is not hashed by ``ctxd allow``; a trusted
  `.contextrc` that wants one of these sets it in its own ``[env]``, which is;
- a file that is missing: nothing applies from it and nothing is said (a
  ``.env.local`` is often absent); it is watched, so creating it applies it;
- a file that cannot be read or is not UTF-8: one warning, nothing from it.

A name without ``=`` (``FOO``, a stray word) sets nothing, as python-dotenv's load_dotenv
does, and is warned about like a line that does not parse.
"""

from ctxd.activation.fileio import cached_parse
from ctxd.errors import ConfigError

# Run by a shell (at each prompt, at start, as a prompt with $(...) expanded, as hook
# functions) or loaded into every program: what a .env edit must not do without `ctxd allow`.
# Not ENV (sh's start-up file): ENV=production is too common a .env line to refuse.
RUNS_CODE = frozenset(
    "PROMPT_COMMAND PS0 PS1 PS2 PS3 PS4 PROMPT PROMPT2 PROMPT3 PROMPT4 RPROMPT RPROMPT2 RPS1 RPS2 SPROMPT "
    "BASH_ENV ZDOTDIR FPATH fpath NULLCMD READNULLCMD precmd_functions preexec_functions chpwd_functions "
    "periodic_functions zshaddhistory_functions zshexit_functions fish_function_path fish_complete_path "
    "INPUTRC SHELLOPTS BASHOPTS PYTHONSTARTUP LD_PRELOAD LD_AUDIT LD_LIBRARY_PATH".split())
RUNS_CODE_PREFIXES = ("BASH_FUNC_", "DYLD_")


def runs_code(name):
    """Whether setting *name* makes a shell run code, or every program load some."""
    return name in RUNS_CODE or name.startswith(RUNS_CODE_PREFIXES)


def _parse(data):
    """The cached form of a .env file's bytes: [[line, name, atoms] | [line, None, what]].

    atoms are the value's pieces: a string is literal text, [name, default or
    None] is a ``${name}`` / ``${name:-default}`` reference. ``name`` None with
    a text is a line that was rejected. A key without a value is left out.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"not UTF-8 ({e.reason} at byte {e.start})") from None
    import io

    from dotenv.parser import parse_stream
    from dotenv.variables import Literal, parse_variables

    out = []
    for b in parse_stream(io.StringIO(text)):
        raw = b.original.string
        line = b.original.line + raw[: len(raw) - len(raw.lstrip())].count("\n")
        if b.error:
            first = raw.strip().splitlines()[0] if raw.strip() else ""
            if len(first) > 40:
                first = first[:40] + "..."
            out.append([line, None, f"cannot parse {first!r} (skipped)"])
            continue
        if b.key is None:
            continue  # blank or comment
        if b.value is None:  # a word without '=': python-dotenv sets nothing; say so
            out.append([line, None, f"cannot parse {b.key if len(b.key) <= 40 else b.key[:40] + '...'!r} (skipped)"])
            continue
        if not _is_name(b.key):
            out.append([line, None, f"{b.key!r} is not a valid environment variable name (skipped)"])
            continue
        if b.key == "PATH":
            out.append([line, None, "PATH is not set from .env files (skipped); "
                                    "put directories in the .contextrc's [path] prepend"])
            continue
        if "\0" in b.value:
            out.append([line, None, f"{b.key} contains a NUL byte (skipped)"])
            continue
        atoms = []
        for atom in parse_variables(b.value):
            if isinstance(atom, Literal):
                atoms.append(atom.value)
            else:
                atoms.append([atom.name, atom.default])
        out.append([line, b.key, atoms])
    return out


def _is_name(name):
    return bool(name) and (name[0].isalpha() or name[0] == "_") and name.isascii() and \
        all(c.isalnum() or c == "_" for c in name)


def read(path, environ):
    """([(name, value)], [warning lines], existed) for the .env file at *path*.

    ``${VAR}`` resolves as python-dotenv resolves it: the file's own earlier
    values first, then *environ* (the environment the project is built on);
    ``${VAR:-default}`` uses the default when VAR is unset.
    """
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return [], [], False
    except IsADirectoryError:
        return [], [f"ctxd: {path}: is a directory, not a .env file"], True
    except OSError as e:
        return [], [f"ctxd: {path}: {e.strerror}"], True
    try:
        entries = cached_parse("dotenv2", data, _parse)
    except ConfigError as e:
        return [], [f"ctxd: {path}: {e.message}; nothing in it applies"], True
    values, warnings, own = [], [], {}
    for line, name, rest in entries:
        if name is None:
            warnings.append(f"ctxd: {path}:{line}: {rest}")
            continue
        if runs_code(name):
            warnings.append(f"ctxd: {path}:{line}: {name} runs code in your shell or every program; a .env file "
                            "cannot set it (skipped): set it in the .contextrc's [env], which ctxd allow covers")
            continue
        pieces = []
        for atom in rest:
            if isinstance(atom, str):
                pieces.append(atom)
            else:
                ref, default = atom
                got = own[ref] if ref in own else environ.get(ref, default if default is not None else "")
                pieces.append(got if got is not None else "")
        value = "".join(pieces)
        if "\0" in value:  # pragma: no cover - a NUL cannot come from the environment
            continue
        own[name] = value
        values.append((name, value))
    return values, warnings, True

