"""Text for a terminal: control characters are shown, never obeyed.

A directory name, a synced message or a segment name may hold escape sequences
(OSC 52 writes the clipboard, CSI moves the cursor). Everything ctxd prints for a
person goes through :func:`visible`: C0 controls but tab, DEL, C1 controls and bytes
that are not UTF-8 become ``\\x1b``-style text. Shell code (escaped per shell) and
machine output (JSON) are not touched. Standard library only, nothing at import.
"""

import sys

_TABLES = {}


def _table(newlines):
    t = _TABLES.get(newlines)
    if t is None:
        t = {c: "\\x%02x" % c for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))}
        t.update({0xDC00 + b: "\\x%02x" % b for b in range(0x80, 0x100)})  # undecodable bytes (surrogateescape)
        del t[0x09]
        if newlines:
            del t[0x0A]
        t = _TABLES[newlines] = t
    return t


def visible(text, newlines=False):
    """*text* with its control characters as visible text; with *newlines*, line breaks
    (and CRLF, as a plain line break) stay: for output made of lines, where a newline in
    user data is no worse than a line ctxd wrote."""
    if text.isprintable():
        return text
    if newlines and "\r\n" in text:
        text = text.replace("\r\n", "\n")
    return text.translate(_table(newlines))


class VisibleStream:
    """A text stream that writes visible(text, newlines=True) to the one it wraps."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        self._stream.write(visible(text, newlines=True))
        return len(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def guard_terminal():
    """Wrap sys.stdout and sys.stderr in a VisibleStream when they are a terminal."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        try:
            tty = stream is not None and not isinstance(stream, VisibleStream) and stream.isatty()
        except (AttributeError, ValueError, OSError):
            tty = False
        if tty:
            setattr(sys, name, VisibleStream(stream))
