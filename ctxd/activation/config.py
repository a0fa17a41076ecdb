"""The user's config file (config.toml in the config directory).

    [trust]
    roots = ["~/work"]        # trees whose projects get detected PATH entries without `ctxd allow`

    [hooks]
    timeout = 5               # default seconds for .contextrc on_enter / on_leave

Parsed once per content (cached as JSON like .contextrc files).
"""

from ctxd import paths
from ctxd.activation.fileio import cached_parse, toml_error_location
from ctxd.errors import ConfigError

DEFAULTS = {"trust": {"roots": []}, "hooks": {"timeout": 5.0}}


def _parse(path, data):
    import tomllib

    try:
        text = data.decode("utf-8")
        doc = tomllib.loads(text)
    except UnicodeDecodeError:
        raise ConfigError(f"{path}:1:1: not UTF-8") from None
    except tomllib.TOMLDecodeError as e:
        line, col, msg = toml_error_location(text, e)
        raise ConfigError(f"{path}:{line}:{col}: {msg}") from None
    out = {"trust": {"roots": []}, "hooks": {"timeout": 5.0}, "raw": _jsonable(doc)}
    trust = doc.get("trust", {})
    roots = trust.get("roots", []) if isinstance(trust, dict) else None
    if not isinstance(roots, list) or not all(isinstance(r, str) for r in roots):
        raise ConfigError(f"{path}: 'trust.roots' must be a list of directories")
    out["trust"]["roots"] = roots
    hooks = doc.get("hooks", {})
    t = hooks.get("timeout", 5) if isinstance(hooks, dict) else None
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 < t <= 600:
        raise ConfigError(f"{path}: 'hooks.timeout' must be a number of seconds between 0 and 600")
    out["hooks"]["timeout"] = float(t)
    return out


def _jsonable(value):
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)  # TOML dates and times


def load(environ=None):
    """The parsed config, or DEFAULTS when there is none. ConfigError if invalid."""
    path = paths.config_file(environ)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return dict(DEFAULTS, raw={})
    except OSError as e:
        raise ConfigError(f"{path}: {e.strerror}") from None
    return cached_parse("config", data, lambda d: _parse(path, d))
