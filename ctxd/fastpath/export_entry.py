"""``ctxd export SHELL``: the hot path, run on every directory change.

The shell hooks call :func:`hook_main` directly (``ctxd.shells`` renders
the call), and the console script (ctxd.fastpath.console_entry) dispatches
``ctxd export`` to :func:`export_main` before click is imported. Standard
library only; errors go through ``ctxd.boundary`` like every protocol's, but
the line reaches the user as a warning inside the shell code the hook
evaluates. ``os`` is imported where it is used: the hook process gets
ctxd.fastpath.posix_os in its place (see :func:`hook_process`).
"""

import sys


FORMATS = ("json", "dotenv", "gha")  # ctxd.activation.formats renders them
USAGE = "ctxd: export: usage: ctxd export SHELL  |  ctxd export json|dotenv|gha [--strict] [DIR]\n"


def _write(text):
    sys.stdout.buffer.write(text.encode("utf-8", "surrogateescape"))
    sys.stdout.flush()


def hook_process():
    """Make this process the hooks' export process (what hook_main() does first): ``os``
    becomes ctxd.fastpath.posix_os, before any module that imports it."""
    from ctxd.fastpath import posix_os

    posix_os.install()


def hook_main():
    """What the hooks run (ctxd.shells.base.export_command()): export_main() in the
    hook process (hook_process()), then the process ends at once with its status, its
    output flushed. The interpreter's own teardown (freeing every module, running
    finalizers) costs a first visit more than a third of what ctxd adds to Python's
    start, and nothing on this path needs it: no atexit handler, no thread, every file
    is closed where it is written."""
    hook_process()
    code = 0
    try:
        export_main()
    except SystemExit as e:
        code = e.code
    exit_at_once(code)


def exit_at_once(code):
    """End the process with *code* (a SystemExit's), its output flushed, without the
    interpreter's teardown (os._exit). Also console_entry.run's way out."""
    import os

    if code is None:
        code = 0
    elif not isinstance(code, int):  # sys.exit("message"), as the interpreter would show it
        sys.stderr.write(f"{code}\n")
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: what was lost is lost either way
            pass
    os._exit(code & 0xFF)


def export_main(argv=None):
    """``ctxd export SHELL`` (or json|dotenv|gha); also what the hooks run directly. Exits."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "export":
        argv = argv[1:]
    if argv and argv[0] in FORMATS:
        formats_main(argv[0], argv[1:])
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        sys.stderr.write(USAGE)
        sys.exit(2)
    from ctxd.shells import get_shell

    # ctxd.boundary only on the way out of an error: every cd pays for what is imported here
    try:
        shell = get_shell(argv[0])
    except Exception as e:
        from ctxd.boundary import cli_exit

        sys.exit(cli_exit(e, "export"))
    try:
        import os

        from ctxd.activation.export import export

        code, status = export(shell, dict(os.environ))  # a plain dict: ~100 lookups, no decoding each
    except (Exception, KeyboardInterrupt) as e:  # never a traceback into the user's prompt
        from ctxd.boundary import failure, say

        f = failure(e, "export")
        if f.quiet or isinstance(e, KeyboardInterrupt):  # no code printed: the shell stays as it was
            if not f.quiet:
                say(f"ctxd: {f.message}")
            sys.exit(f.exit_code)
        message = f"export failed: {f.reason}{f.details}" if f.is_bug else f.message
        try:
            from ctxd.termtext import visible

            _write(shell.join([shell.warn(visible(f"ctxd: {message}"))]))
        except OSError:
            pass
        sys.exit(f.exit_code)
    try:
        _write(code)
    except BrokenPipeError:
        sys.exit(0)
    sys.exit(status)


def formats_main(fmt, argv):
    """``ctxd export json|dotenv|gha [--strict] [DIR]``: DIR's project environment for tools
    that are not shells (see ctxd.activation.formats). Exits."""
    strict, dirs = False, []
    for a in argv:
        if a == "--strict":
            strict = True
        elif a in ("-h", "--help") or (a.startswith("-") and a != "-") or dirs:
            sys.stderr.write(USAGE)
            sys.exit(2)
        else:
            dirs.append(a)
    import os

    from ctxd.boundary import cli_exit, say

    try:
        from ctxd.activation import formats, target

        t = target.build(os.environ, dirs[0] if dirs else None)
        lines, refuse = target.judge(t, strict, f"export {fmt}", "no project environment printed",
                                     "nothing printed")
        from ctxd.termtext import visible

        for line in lines:
            say(visible(line))  # stderr is a person's: a directory name's escapes shown, not obeyed
        if refuse is not None:
            sys.exit(refuse)
        if fmt == "json":
            _write(formats.render_json(t))
        elif fmt == "dotenv":
            _write(formats.render_dotenv(t))
        else:
            formats.write_gha(t, os.environ, _write, say)
    except BrokenPipeError:
        sys.exit(0)
    except (Exception, KeyboardInterrupt) as e:
        sys.exit(cli_exit(e, "export"))
    sys.exit(0)
