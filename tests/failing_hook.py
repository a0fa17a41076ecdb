"""Run ctxd (``failing_hook.py TOOL`` = ``ctxd chat hook TOOL``; ``--cli ARGS`` = ``ctxd ARGS``)
on a store that is full: every connection opened to a ``store.db`` gets
``PRAGMA max_page_count`` = its current size, so SQLite answers a write that needs
one more page with a real SQLITE_FULL ("database or disk is full"), deterministically,
on any file system and without root (tests/test_store_failures.py).
"""

import sqlite3
import sys

_connect = sqlite3.connect


def _full_connect(database, *args, **kwargs):
    db = _connect(database, *args, **kwargs)
    if str(database).endswith("store.db"):
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        if pages:
            db.execute(f"PRAGMA max_page_count = {pages}")
    return db


sqlite3.connect = _full_connect

if __name__ == "__main__":
    from ctxd.fastpath.console_entry import main

    if sys.argv[1:2] == ["--cli"]:
        sys.argv = ["ctxd", *sys.argv[2:]]
    else:
        sys.argv = ["ctxd", "chat", "hook", *sys.argv[1:]]
    main()
