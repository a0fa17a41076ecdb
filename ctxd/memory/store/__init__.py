"""The SQLite store: the only place SQL runs, and the typed items it keeps."""
