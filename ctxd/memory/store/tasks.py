"""The store's SQL for the tasks tables (a mixin of ctxd.memory.store.db.Store).

Only the store modules (ctxd/memory/store/) run SQL; everything else calls
their methods. ctxd.memory.context.tasks holds the logic (one open task at a time,
what closing one records).
"""

import time

TYPE_CHECKING = False  # typing is not imported at run time: the hooks import the store
if TYPE_CHECKING:
    from sqlite3 import Row


class TasksTables:
    """Methods of Store over the tasks tables; self.db is the connection."""

    def open_task(self) -> "Row | None":
        """The open task's row (the newest if several), or None. A task received through ctxd sync
        is another machine's until taken (SyncTables.take_task)."""
        return self.db.execute("SELECT * FROM tasks WHERE status = 'open' AND author IS NULL "
                               "ORDER BY id DESC LIMIT 1").fetchone()

    def task_notes(self, task_id: int) -> list[str]:
        """The texts of *task_id*'s notes, oldest first."""
        return [r["text"] for r in self.db.execute(
            "SELECT text FROM task_notes WHERE task_id = ? ORDER BY id", (task_id,))]

    def insert_task(self, name: str, started: float | None = None) -> int:
        """Open a task; return its id."""
        return self.db.execute("INSERT INTO tasks(name, status, started) VALUES (?, 'open', ?)",
                               (name, time.time() if started is None else started)).lastrowid

    def add_task_note(self, task_id: int, text: str, ts: float | None = None) -> None:
        self.db.execute("INSERT INTO task_notes(task_id, ts, text) VALUES (?, ?, ?)",
                        (task_id, time.time() if ts is None else ts, text))

    def finish_task(self, task_id: int, finished: float | None = None) -> None:
        self.db.execute("UPDATE tasks SET status = 'done', finished = ? WHERE id = ?",
                        (time.time() if finished is None else finished, task_id))
