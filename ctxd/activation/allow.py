"""What ``ctxd allow`` / ``ctxd init`` / ``ctxd edit`` share: which directory a trust command
is about, and allowing the exact bytes of a validated .contextrc. Not on the cd path."""

import os

from ctxd.activation import contextrc, trust
from ctxd.activation.detectors import find_root
from ctxd.activation.fileio import sha256_hex
from ctxd.errors import NotFoundError


def target_dir(directory):
    """The directory a trust command is about: DIR itself if it is a root, else its project root."""
    from ctxd.activation.export import logical_pwd

    here = logical_pwd(dict(os.environ))
    d = os.path.normpath(os.path.join(here, os.path.expanduser(directory))) if directory else here
    if not os.path.isdir(d):
        raise NotFoundError(f"no such directory: {d}")
    if os.path.isfile(os.path.join(d, contextrc.FILENAME)):
        return d
    root = find_root(d)
    if root is None:
        raise NotFoundError(f"no project at or above {d} (no marker file, no .contextrc)")
    return root


def allow_rc(path, data=None):
    """Validate a .contextrc's bytes and allow exactly those bytes."""
    if data is None:
        with open(path, "rb") as f:
            data = f.read()
    parsed = contextrc.parse_bytes(path, data)  # ConfigError -> exit 3, nothing allowed
    trust.allow(path, sha256_hex(data))
    return parsed
