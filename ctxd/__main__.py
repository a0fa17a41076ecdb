from ctxd.fastpath.console_entry import run

run()
