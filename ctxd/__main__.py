from ctxd.fastpath.console_entry import main

main()
