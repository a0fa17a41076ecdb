"""Domain exceptions and the exit codes they map to.

The library raises; the one error boundary (``ctxd.boundary``) maps what it
raises for every protocol: on the command line a ``CtxdError`` becomes
``ctxd: <message>`` on stderr and its exit code; AI CLI hooks and the MCP
server answer with the same message their own way. Every error ctxd raises
for a user derives from ``CtxdError`` (tests/test_architecture.py checks it).
Exit codes are documented in docs/exit-codes.md.
"""


class ExitCode:
    OK = 0
    ERROR = 1  # unexpected failure (a bug); details go to the log file
    USAGE = 2  # bad command line (click's own code for usage errors)
    CONFIG = 3  # a config or .contextrc file is invalid
    NOT_FOUND = 4  # no project / file / record where one was required
    UNTRUSTED = 5  # the file is not trusted (ctxd allow)
    STATE = 6  # the shell state variable was corrupt; environment unloaded
    VALUE = 7  # a value cannot be represented (e.g. NUL byte in a variable)
    SYNC = 8  # ctxd sync: git failed or refused (remote unreachable, ref rejected, timed out)
    INTERRUPTED = 130  # Ctrl-C: 128 + SIGINT, what shells report for an interrupted command


class CtxdError(Exception):
    """An error the user can act on; printed as one line, never a traceback."""

    exit_code = ExitCode.ERROR

    def __init__(self, message: str, exit_code: int | None = None):
        super().__init__(message)
        self.message = message
        if exit_code is not None:
            self.exit_code = exit_code


class UsageError(CtxdError):
    exit_code = ExitCode.USAGE


class ConfigError(CtxdError):
    exit_code = ExitCode.CONFIG


class NotFoundError(CtxdError):
    exit_code = ExitCode.NOT_FOUND


class StateError(CtxdError):
    exit_code = ExitCode.STATE


class ValueRejected(CtxdError):
    exit_code = ExitCode.VALUE


class SyncError(CtxdError):
    exit_code = ExitCode.SYNC
