"""Every path ctxd uses, resolved in one place.

platformdirs decides where things live (XDG on Linux, ~/Library on macOS,
%LOCALAPPDATA% on Windows). ``CTXD_DATA_DIR``, ``CTXD_CONFIG_DIR``,
``CTXD_STATE_DIR`` and ``CTXD_CACHE_DIR`` override each base directory (tests
and unusual setups use them).

The shell hook's hot path (``ctxd export``) must not pay for importing
platformdirs (~25 ms, it pulls in tempfile and typing), so on Linux and the
BSDs the XDG rules platformdirs applies are computed here directly; a test
checks that both answers agree. Elsewhere platformdirs is always used.
"""

import os
import sys

APP = "ctxd"

_KINDS = {
    # kind: (override variable, XDG variable, default below $HOME)
    "data": ("CTXD_DATA_DIR", "XDG_DATA_HOME", ".local/share"),
    "config": ("CTXD_CONFIG_DIR", "XDG_CONFIG_HOME", ".config"),
    "state": ("CTXD_STATE_DIR", "XDG_STATE_HOME", ".local/state"),
    "cache": ("CTXD_CACHE_DIR", "XDG_CACHE_HOME", ".cache"),
}

_XDG_PLATFORM = sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd"))


def _base(kind: str, environ=None) -> str:
    env = os.environ if environ is None else environ
    override, xdg, default = _KINDS[kind]
    value = env.get(override, "").strip()
    if value:
        return os.path.abspath(os.path.expanduser(value))
    if _XDG_PLATFORM:
        value = env.get(xdg, "")
        if value.startswith("/"):  # the XDG spec (and platformdirs) ignore relative values
            return os.path.join(value, APP)
        return os.path.join(os.path.expanduser("~"), default, APP)
    return _platformdirs(kind)


def _platformdirs(kind: str) -> str:
    import platformdirs

    fn = {
        "data": platformdirs.user_data_dir,
        "config": platformdirs.user_config_dir,
        "state": platformdirs.user_state_dir,
        "cache": platformdirs.user_cache_dir,
    }[kind]
    return fn(APP, appauthor=False)


def data_dir(environ=None) -> str:
    return _base("data", environ)


def config_dir(environ=None) -> str:
    return _base("config", environ)


def state_dir(environ=None) -> str:
    return _base("state", environ)


def cache_dir(environ=None) -> str:
    return _base("cache", environ)


def config_file(environ=None) -> str:
    return os.path.join(config_dir(environ), "config.toml")


def trust_dir(environ=None) -> str:
    return os.path.join(data_dir(environ), "trust")


def stamp_dir(environ=None) -> str:
    return os.path.join(cache_dir(environ), "stamps")


def log_file(environ=None) -> str:
    return os.path.join(state_dir(environ), "ctxd.log")


def _sha1_hex(text: str) -> str:
    try:  # the builtin module is cheap; hashlib loads OpenSSL (~13 ms)
        from _sha1 import sha1
    except ImportError:  # pragma: no cover - builds without builtin hashes
        from hashlib import sha1
    return sha1(text.encode("utf-8", "surrogateescape")).hexdigest()


def project_key(root: str) -> str:
    """A readable, stable directory name for a project root.

    Keyed by the real path, so a project reached through a symlink shares
    its context with the same project reached directly.
    """
    real = os.path.realpath(root)
    name = os.path.basename(real.rstrip(os.sep)) or "root"
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:40]
    return f"{safe}-{_sha1_hex(real)[:12]}"


def context_dir(root: str, environ=None) -> str:
    """Where the conversation context of the project at *root* lives."""
    return os.path.join(data_dir(environ), "projects", project_key(root))


def all_paths(environ=None) -> dict:
    return {
        "config_dir": config_dir(environ),
        "config_file": config_file(environ),
        "data_dir": data_dir(environ),
        "state_dir": state_dir(environ),
        "cache_dir": cache_dir(environ),
        "trust_dir": trust_dir(environ),
        "stamp_dir": stamp_dir(environ),
        "log_file": log_file(environ),
    }
