"""The ``ctxd`` console script.

``ctxd export`` is the hot path (every directory change), so it is dispatched
here before click or anything heavy is imported, and so are ``ctxd chat hook``
(AI CLIs run it on every prompt), ``ctxd recall``, ``ctxd context`` and ``ctxd
exec``; every other command goes to the click app in ``ctxd.cli``. Every one of
them maps its errors through ``ctxd.boundary``, and all but the first two write
to a terminal through ``ctxd.termtext`` (escape sequences in user data shown as
text).

``run`` is what the console script calls; ``main`` stays for scripts installed before
(an editable install never rewrites its script) and does the same, but ends through the
interpreter's teardown.
"""

import sys


def main():
    """Run the command line (exits), or hand it to click."""
    argv = sys.argv[1:]
    if argv[:1] == ["export"]:
        from ctxd.fastpath.export_entry import export_main

        export_main(argv[1:])
    if argv[:2] == ["chat", "hook"] and len(argv) > 2 and argv[2] not in ("-h", "--help"):
        from ctxd.integrations.agent_hooks import main as chat_hook_main  # AI CLI hooks: no click either

        sys.exit(chat_hook_main(argv[2:]))
    from ctxd.termtext import guard_terminal

    guard_terminal()  # what a person reads shows control characters as text (the two above print code, JSON)
    if argv[:1] in (["recall"], ["context"]):
        from ctxd.fastpath.recall_entry import main as recall_main  # AI tools may run these on every question

        recall_main(argv)  # exits, unless --help or a usage error is click's to print
    if argv[:1] == ["exec"]:
        from ctxd.fastpath.exec_entry import exec_main  # scripts and editors run it often: no click either

        exec_main(argv[1:])  # exits (execs the command), unless --help: click's to print
    from ctxd.cli import main as cli_main

    cli_main()


def run():
    """The console script ([project.scripts]): ``main()``; then, when ``chat hook``, ``recall``
    or ``context`` answered without click, the process ends at once with its exit code, its
    output flushed, skipping the interpreter's teardown (freeing every module: 3-6 ms of CPU,
    see ctxd.fastpath). Nothing on those paths needs the teardown: no atexit handler, no
    thread; files are closed where they are written; the store is closed on the way out of
    its ``with`` (a transaction not committed would be rolled back by either ending alike);
    the refresh a hook starts is a detached process already running. Anything else (click's
    commands, its help and usage errors) ends the ordinary way."""
    try:
        main()
        code = 0
    except SystemExit as e:
        code = e.code
    fast = sys.argv[1:3] == ["chat", "hook"] or sys.argv[1:2] in (["recall"], ["context"])
    if not fast or "ctxd.cli" in sys.modules:  # click answered: its help, a usage error
        sys.exit(code)
    from ctxd.fastpath.export_entry import exit_at_once

    exit_at_once(code)
