"""The store's SQL for the concepts tables (a mixin of ctxd.memory.store.Store).

Only the store modules (ctxd/memory/store*.py) run SQL; everything else calls
their methods.
"""


class ConceptsTables:
    """Methods of Store over the concepts tables; self.db is the connection."""
