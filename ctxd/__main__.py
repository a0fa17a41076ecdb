from ctxd._entry import main

main()
