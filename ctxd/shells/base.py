"""What every shell shares: value checks, the hook template loader."""

import os
import sys

from ctxd.errors import ValueRejected


def check_name(name):
    """Only plain identifiers ([A-Za-z_][A-Za-z0-9_]*) may reach eval as variable names.

    (isascii + isidentifier is exactly that set, without importing re.)
    """
    if not (isinstance(name, str) and name.isascii() and name.isidentifier()):
        raise ValueRejected(f"invalid environment variable name {name!r}")
    return name


def check_value(name, value):
    if "\0" in value:
        raise ValueRejected(f"{name}: a NUL byte cannot be stored in an environment variable")
    return value


def to_bytes(value):
    # os.environ decodes undecodable bytes with surrogateescape; undo that exactly
    return value.encode("utf-8", "surrogateescape")


def template_path(filename):
    """The hook template: ctxd/_shell/ in a wheel, ../shell/ in a source checkout."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for candidate in (
        os.path.join(here, "_shell", filename),
        os.path.join(os.path.dirname(here), "shell", filename),
    ):
        if os.path.isfile(candidate):
            return candidate
    raise FileNotFoundError(f"hook template {filename} not found next to {here}")


def export_command():
    """argv that runs `ctxd export` as fast as possible, immune to the project.

    The absolute interpreter (no version-manager shim), ``-I`` (ignore PYTHON*
    variables a project may set, and never import from the current directory)
    and ``-S`` (skip site: .pth files can cost tens of milliseconds), with the
    directories that hold ctxd and its import-time dependencies put back on
    sys.path explicitly.
    """
    import ctxd

    dirs = [os.path.dirname(os.path.dirname(os.path.abspath(ctxd.__file__)))]
    try:
        import platformdirs  # needed on the hot path only off Linux

        d = os.path.dirname(os.path.dirname(os.path.abspath(platformdirs.__file__)))
        if d not in dirs:
            dirs.append(d)
    except ImportError:
        pass
    code = f"import sys;sys.path[:0]={dirs!r};from ctxd._entry import export_main;export_main()"
    return [sys.executable, "-I", "-S", "-c", code]


class Shell:
    name = ""
    template = ""

    # -- primitives each shell defines ------------------------------------
    def quote(self, value):
        raise NotImplementedError

    def set_var(self, name, value):
        raise NotImplementedError

    def unset_var(self, name):
        raise NotImplementedError

    def set_path(self, entries):
        return self.set_var("PATH", ":".join(entries))

    def warn(self, message):
        raise NotImplementedError

    def define_restore(self, statements):
        raise NotImplementedError

    def drop_restore(self):
        raise NotImplementedError

    def if_value(self, name, value, statement):
        """Run *statement* only while *name* still holds *value* (None: unset)."""
        raise NotImplementedError

    def join(self, statements):
        return "".join(s + "\n" for s in statements)

    # -- the hook -----------------------------------------------------------
    def hook(self, markers, command):
        with open(template_path(self.template), encoding="utf-8") as f:
            text = f.read()
        return (
            text.replace("@CTXD_MARKERS@", " ".join(self.quote(m) for m in markers))
            .replace("@CTXD_COMMAND@", " ".join(self.quote(w) for w in command))
        )
