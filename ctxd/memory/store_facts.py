"""The store's SQL for the facts tables (a mixin of ctxd.memory.store.Store).

Only the store modules (ctxd/memory/store*.py) run SQL; everything else calls
their methods.
"""


class FactsTables:
    """Methods of Store over the facts tables; self.db is the connection."""
