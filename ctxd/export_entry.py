"""``ctxd export bash|zsh|fish``: the hot path, run on every directory change.

The shell hooks call :func:`export_main` directly (``ctxd.shells`` renders
the call), and ``ctxd._entry`` dispatches ``ctxd export`` here before click
is imported. Standard library only; errors go through ``ctxd.boundary`` like
every protocol's, but the line reaches the user as a warning inside the shell
code the hook evaluates.
"""

import os
import sys


def _write(text):
    sys.stdout.buffer.write(text.encode("utf-8", "surrogateescape"))
    sys.stdout.flush()


def export_main(argv=None):
    """``ctxd export bash|zsh|fish``; also what the hooks run directly. Exits."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "export":
        argv = argv[1:]
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        sys.stderr.write("usage: ctxd export bash|zsh|fish\n")
        sys.exit(2)
    from ctxd.boundary import cli_exit, failure, say
    from ctxd.shells import get_shell

    try:
        shell = get_shell(argv[0])
    except Exception as e:
        sys.exit(cli_exit(e, "export"))
    try:
        from ctxd.activation.export import export

        code, status = export(shell, os.environ)
    except (Exception, KeyboardInterrupt) as e:  # never a traceback into the user's prompt
        f = failure(e, "export")
        if f.quiet or isinstance(e, KeyboardInterrupt):  # no code printed: the shell stays as it was
            if not f.quiet:
                say(f"ctxd: {f.message}")
            sys.exit(f.exit_code)
        message = f"export failed: {f.reason}{f.details}" if f.is_bug else f.message
        try:
            _write(shell.join([shell.warn(f"ctxd: {message}")]))
        except OSError:
            pass
        sys.exit(f.exit_code)
    try:
        _write(code)
    except BrokenPipeError:
        sys.exit(0)
    sys.exit(status)
