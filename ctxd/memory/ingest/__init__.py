"""Getting transcripts into the store: import driver, spool, reconcile."""
