"""The store's SQL for the tasks tables (a mixin of ctxd.memory.store.Store).

Only the store modules (ctxd/memory/store*.py) run SQL; everything else calls
their methods.
"""


class TasksTables:
    """Methods of Store over the tasks tables; self.db is the connection."""
