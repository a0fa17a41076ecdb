"""Reading and writing files that belong to the user (the AI CLIs' settings, their context files).

A file that is not UTF-8 is refused; writes are atomic, go through a symlink and keep the file's
mode; in a project, a file a symlink takes out of the project is refused (``refuse_link_out``).
"""

import os

from ctxd.errors import ConfigError, CtxdError, ExitCode


def read_text(path):
    """(bytes, text) of a file, or (None, None) when it does not exist."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None, None
    except OSError as e:
        raise CtxdError(f"cannot read {path}: {e.strerror}", ExitCode.ERROR) from None
    try:
        return raw, raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not UTF-8 text; nothing was changed") from None

def refuse_link_out(path, root):
    """Refuse *path*, a file of the project at *root*, when a symlink on its way leads out of
    the project: writing through it would change a file the repository chose, not the user."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    if real != real_root and not real.startswith(real_root.rstrip(os.sep) + os.sep):
        raise CtxdError(f"{path} is a symlink out of the project (to {real}); not writing through it "
                        f"(remove the link, then run this again)", ExitCode.UNTRUSTED)


def write_text(path, text):
    """Atomically replace *path* (through a symlink), keeping its mode; new files get 0644."""
    from ctxd.activation.fileio import atomic_write

    target = os.path.realpath(path)
    try:
        mode = os.stat(target).st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o644
    os.makedirs(os.path.dirname(target), exist_ok=True)
    atomic_write(target, text, mode=mode)
    try:
        os.chmod(target, mode)  # the umask may have narrowed it
    except OSError:
        pass
