"""Console-script entry point.

``ctxd export`` is the hot path (every directory change), so it is dispatched
here before click or anything heavy is imported, and so is ``ctxd chat hook``
(AI CLIs run it on every prompt); every other command goes to the click app
in ``ctxd.cli``.
"""

import os
import sys


def _log_exception(where):
    """Write the traceback to the log file; return its path (or None)."""
    try:
        import traceback

        from ctxd import paths

        path = paths.log_file()
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        import time

        with open(path, "a", encoding="utf-8") as f:
            f.write(f"--- {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {where} (pid {os.getpid()})\n")
            traceback.print_exc(file=f)
        return path
    except Exception:
        return None


def _write(text):
    sys.stdout.buffer.write(text.encode("utf-8", "surrogateescape"))
    sys.stdout.flush()


def export_main(argv=None):
    """``ctxd export bash|zsh|fish``; also what the hooks run directly."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "export":
        argv = argv[1:]
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        sys.stderr.write("usage: ctxd export bash|zsh|fish\n")
        sys.exit(2)
    from ctxd.errors import CtxdError
    from ctxd.shells import get_shell

    try:
        shell = get_shell(argv[0])
    except CtxdError as e:
        sys.stderr.write(f"ctxd: {e.message}\n")
        sys.exit(e.exit_code)
    try:
        from ctxd.activation.export import export

        code, status = export(shell, os.environ)
    except CtxdError as e:
        _write(shell.join([shell.warn(f"ctxd: {e.message}")]))
        sys.exit(e.exit_code)
    except Exception as e:  # never a traceback into the user's prompt
        log = _log_exception("export")
        where = f" (details in {log})" if log else ""
        _write(shell.join([shell.warn(f"ctxd: export failed: {e.__class__.__name__}: {e}{where}")]))
        sys.exit(1)
    _write(code)
    sys.exit(status)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "export":
        export_main(sys.argv[2:])
    if sys.argv[1:3] == ["chat", "hook"] and len(sys.argv) > 3 and sys.argv[3] not in ("-h", "--help"):
        from ctxd.integrations.hooks import main as hook_main  # AI CLI hooks: no click either

        sys.exit(hook_main(sys.argv[3:]))
    from ctxd.cli import main as cli_main

    cli_main()
