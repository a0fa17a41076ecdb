"""One module per command or group, each defining its click commands.

``ctxd.cli`` registers them (subcommands of a group included); a command
module never imports another one: what two commands share lives in the
memory core or another module outside this package (tests/test_architecture.py).
"""
