"""Helpers tests import by name (a module of its own: two conftest.py files would clash)."""


def write_config(home, text):
    """Write the isolated user's ~/.config/ctxd/config.toml."""
    d = home / ".config" / "ctxd"
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.toml").write_text(text)
