"""Console-script entry point.

``ctxd export`` is the hot path (every directory change), so it is dispatched
here before click or anything heavy is imported, and so are ``ctxd chat hook``
(AI CLIs run it on every prompt), ``ctxd recall`` and ``ctxd context``; every other command goes to the click app
in ``ctxd.cli``. Every one of them maps its errors through ``ctxd.boundary``, and
all but the first two write to a terminal through ``ctxd.termtext`` (escape
sequences in user data shown as text).
"""

import sys

from ctxd.export_entry import export_main  # noqa: F401  (hooks rendered by earlier versions call it here)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "export":
        export_main(sys.argv[2:])
    if sys.argv[1:3] == ["chat", "hook"] and len(sys.argv) > 3 and sys.argv[3] not in ("-h", "--help"):
        from ctxd.integrations.agent_hooks import main as hook_main  # AI CLI hooks: no click either

        sys.exit(hook_main(sys.argv[3:]))
    from ctxd.termtext import guard_terminal

    guard_terminal()  # what a person reads shows control characters as text (the two above print code, JSON)
    if sys.argv[1:2] in (["recall"], ["context"]):
        from ctxd.fast_entry import main as fast_main  # AI tools may run these on every question: no click

        fast_main(sys.argv[1:])  # exits, unless --help or a usage error is click's to print
    if len(sys.argv) > 1 and sys.argv[1] == "exec":
        from ctxd.exec_entry import exec_main  # scripts and editors run it often: no click either

        exec_main(sys.argv[2:])  # exits (execs the command), unless --help: click's to print
    from ctxd.cli import main as cli_main

    cli_main()
