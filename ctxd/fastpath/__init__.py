"""The speed tricks of ctxd's hot paths, fenced in one package: the hook's export process
(export_entry, posix_os, minijson, bundle), the start-up copy of the hook (startup_copy) and
the console script's commands run without click (console_entry, recall_entry, exec_entry)."""
