"""The one error boundary: what any exception means to each protocol ctxd speaks.

Library code raises; a protocol's entry point (the click app, ``ctxd export``,
the AI CLI hook runner, the MCP server) catches and asks this module what to
do. :func:`failure` is the one mapping, every protocol applies it:

- a ``CtxdError`` (every domain error derives from it) is the user's to act on:
  its message and its exit code, not logged;
- ``KeyboardInterrupt``: "interrupted", exit 130;
- ``BrokenPipeError`` (the reader went away, e.g. ``ctxd chat log | head``):
  nothing to say, exit 0;
- anything else is a bug: the traceback goes to the log file
  (:func:`log_exception`) and the message is ``internal error: Class: text
  (details in LOG)``, exit 1.

Per protocol (see docs/exit-codes.md):

- CLI (:func:`cli_exit`): ``ctxd: <message>`` on stderr, the exit code.
- ``ctxd export``: the same message, but as a warning in the shell code it
  prints, so the user sees it in the prompt (ctxd.fastpath.export_entry).
- AI CLI hooks (:func:`hook_exit`): always exit 0; every failure is logged
  with its traceback, and one stderr line says ``ctxd: chat hook TOOL:
  nothing recorded (REASON); see LOG``.
- MCP (``ctxd.integrations.mcp_server``): a tool error, resource error,
  resource-not-found (``Failure.not_found``) or prompt error carrying the
  message.

Imported by ``ctxd export`` and the AI CLI hook path: standard library only,
and nothing but ``os`` and ``sys`` at import time.
"""

import os
import sys

REASON_MAX = 300  # characters of an exception's text kept in a log entry's heading
LINE_REASON_MAX = 120  # ... and in a hook's stderr line


class Failure:
    """What one exception means: the message to show (without the ``ctxd: `` prefix),
    the exit code, whether it is a bug, and the log file its traceback went to (or None).

    ``reason`` is the exception on one line (the message of a domain error,
    ``Class: text`` for anything else); ``not_found`` tells protocols that
    have a "not found" answer (MCP resources, prompts) to use it; ``quiet``
    means there is nothing to say (a broken pipe).
    """

    __slots__ = ("message", "exit_code", "is_bug", "log_path", "reason", "not_found", "quiet")

    def __init__(self, message, exit_code, is_bug=False, log_path=None, reason="", not_found=False,
                 quiet=False):
        self.message = message
        self.exit_code = exit_code
        self.is_bug = is_bug
        self.log_path = log_path
        self.reason = reason or message
        self.not_found = not_found
        self.quiet = quiet

    @property
    def details(self):
        """`` (details in LOG)`` when the traceback was logged, else ""."""
        return f" (details in {self.log_path})" if self.log_path else ""

    def __repr__(self):
        return (f"Failure({self.message!r}, exit_code={self.exit_code}, is_bug={self.is_bug}, "
                f"log_path={self.log_path!r})")


def log_exception(where, exc=None):
    """Append a dated entry (UTC time, *where*, pid) and the traceback of *exc* (default:
    the exception being handled) to ctxd's log file; return its path, or None when it
    cannot be written (logging never raises)."""
    try:
        from ctxd.isotime import format_utc
        import traceback

        from ctxd import paths

        if exc is None:
            exc = sys.exc_info()[1]
        path = paths.log_file()
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)  # tracebacks quote conversations
        with open(fd, "a", encoding="utf-8", errors="replace") as f:
            f.write(f"--- {format_utc()} {where} (pid {os.getpid()})\n")
            if exc is not None and exc is not _NO_EXCEPTION:
                traceback.print_exception(type(exc), exc, exc.__traceback__, file=f)
        return path
    except Exception:
        return None


def log_line(text):
    """Append one dated line (UTC time, *text*, pid) to ctxd's log file, no traceback; its path,
    or None when it cannot be written (never raises)."""
    return log_exception(text, _NO_EXCEPTION)


class _NoException(Exception):
    pass


_NO_EXCEPTION = _NoException()


def _is_domain(exc):
    from ctxd.errors import CtxdError

    return isinstance(exc, CtxdError)


def _message(exc):
    return getattr(exc, "message", None) or str(exc)


def describe(exc):
    """*exc* on one line: a domain error's message, else ``Class: text``."""
    text = _message(exc) if _is_domain(exc) else f"{exc.__class__.__name__}: {exc}"
    return " ".join(str(text).splitlines())


def failure(exc, where, log=False):
    """Map *exc* to a :class:`Failure`; bugs (and, with *log*, everything) are logged under *where*."""
    from ctxd.errors import ExitCode, NotFoundError

    reason = describe(exc)
    log_path = log_exception(f"{where}: {reason[:REASON_MAX]}", exc) if log else None
    if _is_domain(exc):
        return Failure(_message(exc), exc.exit_code, log_path=log_path, reason=reason,
                       not_found=isinstance(exc, NotFoundError))
    if isinstance(exc, KeyboardInterrupt):
        return Failure("interrupted", ExitCode.INTERRUPTED, log_path=log_path, reason="interrupted")
    if isinstance(exc, BrokenPipeError):
        return Failure("", ExitCode.OK, log_path=log_path, reason=reason, quiet=True)
    if log_path is None:
        log_path = log_exception(f"{where}: {reason[:REASON_MAX]}", exc)
    details = f" (details in {log_path})" if log_path else ""
    return Failure(f"internal error: {reason}{details}", ExitCode.ERROR, is_bug=True, log_path=log_path,
                   reason=reason)


def say(line, stream=None):
    """Write one line to stderr (or *stream*); never raises."""
    stream = sys.stderr if stream is None else stream
    try:
        stream.write(line + "\n")
        stream.flush()
    except (OSError, ValueError, AttributeError):  # no stderr, or a closed one: nothing else to do
        pass


def cli_exit(exc, where="cli"):
    """The CLI's answer to *exc*: ``ctxd: <message>`` on stderr; returns the exit code."""
    f = failure(exc, where)
    if not f.quiet:
        say(f"ctxd: {f.message}")
    return f.exit_code


def hook_exit(exc, tool):
    """An AI CLI hook's answer to *exc*: logged with its traceback, one stderr line; returns 0.

    A hook never fails the AI CLI, whatever went wrong.
    """
    f = failure(exc, f"chat hook {tool}", log=True)
    reason = f.reason[:LINE_REASON_MAX]
    say(f"ctxd: chat hook {tool}: nothing recorded ({reason}){f'; see {f.log_path}' if f.log_path else ''}")
    return 0
