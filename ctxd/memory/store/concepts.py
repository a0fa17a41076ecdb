"""The store's SQL for the concepts tables (a mixin of ctxd.memory.store.db.Store).

Only the store modules (ctxd/memory/store/) run SQL; everything else calls
their methods. ctxd.handoff.knowledge holds the logic (mastery, FSRS cards,
what is due); the JSON columns (prerequisites, card) pass through as text.
The writing methods open no transaction: knowledge calls them inside
``store.transaction()``.
"""

TYPE_CHECKING = False  # typing is not imported at run time: the hooks import the store
if TYPE_CHECKING:
    from sqlite3 import Row


class ConceptsTables:
    """Methods of Store over the concepts tables; self.db is the connection."""

    # -- concepts ------------------------------------------------------------------------
    def concept(self, key: str) -> "Row | None":
        """The concept row with *key*, or None."""
        return self.db.execute("SELECT * FROM concepts WHERE key = ?", (key,)).fetchone()

    def concepts(self) -> "list[Row]":
        """Every concept row, by key."""
        return self.db.execute("SELECT * FROM concepts ORDER BY key").fetchall()

    def due_concepts(self, now: float, stale_before: float) -> "list[Row]":
        """Rows never practised, due by *now*, or last practised at or before *stale_before*."""
        return self.db.execute("SELECT * FROM concepts WHERE practices = 0 OR due <= ? OR last_practice <= ?",
                               (now, stale_before)).fetchall()

    def ensure_concept(self, key: str, name: str, created: float) -> None:
        """Add the concept unless *key* exists (then nothing changes)."""
        self.db.execute("INSERT INTO concepts(key, name, created) VALUES (?, ?, ?) ON CONFLICT(key) DO NOTHING",
                        (key, name, created))

    def record_practice(self, key: str, mastery: float, error: bool, when: float, card: str, due: float) -> None:
        """One practice: the new *mastery*, one more practice (and error when *error*),
        last_practice never moved back, the FSRS *card* (JSON text) and its *due* time."""
        self.db.execute("UPDATE concepts SET mastery = ?, practices = practices + 1, errors = errors + ?, "
                        "last_practice = max(coalesce(last_practice, 0), ?), card = ?, due = ? WHERE key = ?",
                        (mastery, 1 if error else 0, when, card, due, key))

    def set_concept_prerequisites(self, key: str, prerequisites: str) -> None:
        """Replace the prerequisites (JSON text)."""
        self.db.execute("UPDATE concepts SET prerequisites = ? WHERE key = ?", (prerequisites, key))

    # -- observations (an archive's key point applied once per concept and source) -------
    def observation_level(self, concept: str, source: str) -> str | None:
        """The level last observed for (*concept*, *source*), or None."""
        row = self.db.execute("SELECT level FROM concept_observations WHERE concept = ? AND source = ?",
                              (concept, source)).fetchone()
        return row[0] if row else None

    def record_observation(self, concept: str, source: str, level: str, ts: float) -> None:
        self.db.execute("INSERT INTO concept_observations(concept, source, level, ts) VALUES (?,?,?,?) "
                        "ON CONFLICT(concept, source) DO UPDATE SET level = excluded.level, ts = excluded.ts",
                        (concept, source, level, ts))
