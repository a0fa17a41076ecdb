"""Working memory: the task at hand, its notes, shown in the context while open.

``ctxd task start NAME`` opens a task (one at a time: starting another puts
the open one back to done first only when asked), notes attach to it,
``ctxd task done`` closes it and releases it into the long-term record: a
system message in the conversation, so its facts are extracted like any
other turn.
"""

import time

from ctxd.errors import CtxdError, ExitCode
from ctxd.isotime import format_minute


def current(store):
    """The open task (a row: id, name, status, started, finished), or None."""
    return store.open_task()


def notes(store, task_id):
    return store.task_notes(task_id)


def start(store, name):
    name = name.strip()
    if not name:
        raise CtxdError("a task needs a name", ExitCode.USAGE)
    if store.redactor is not None:
        name, _ = store.redactor(name)  # it is shown, rendered and synced like a note
    with store.transaction():  # the check and the insert together: two starts cannot both open one
        open_ = current(store)
        if open_ is not None:
            raise CtxdError(f"task {open_['name']!r} is still open: ctxd task done first", ExitCode.USAGE)
        return store.insert_task(name, time.time())


def note(store, text, redact=True):
    t = current(store)
    if t is None:
        raise CtxdError("no open task: ctxd task start NAME", ExitCode.NOT_FOUND)
    if redact and store.redactor is not None:
        text, _ = store.redactor(text)
    store.add_task_note(t["id"], text, time.time())
    return t["name"]


def done(store):
    t = current(store)
    if t is None:
        raise CtxdError("no open task", ExitCode.NOT_FOUND)
    ns = notes(store, t["id"])
    body = f"Task done: {t['name']}." + "".join(f"\n- {n}" for n in ns)
    store.finish_task(t["id"], time.time())
    store.add("system", body, source="task", importance=0.8, redact=False)
    return t["name"], len(ns)


def render_shared(store):
    """The open tasks received from other machines, one labelled line each ("" when none):
    shown apart from the working memory, which is only ever a task of this machine."""
    rows = store.shared_open_tasks()
    return "\n".join(f"- {t['name']} (from {t['author']}, open since {format_minute(t['started'])} UTC; "
                     f"ctxd task take to continue it here)" for t in rows[:5])


def take(store, name=None):
    """Make a task received from another machine (the newest open one, or the one named *name*)
    this machine's working task; its name."""
    with store.transaction():
        if current(store) is not None:
            raise CtxdError(f"task {current(store)['name']!r} is open here: ctxd task done first", ExitCode.USAGE)
        rows = [t for t in store.shared_open_tasks() if name is None or t["name"] == name]
        if not rows:
            raise CtxdError("no open task from another machine" + (f" named {name!r}" if name else ""),
                            ExitCode.NOT_FOUND)
        store.take_task(rows[0]["id"])
        return rows[0]["name"]


def render_open(store):
    t = current(store)
    if t is None:
        return ""
    ns = notes(store, t["id"])
    since = format_minute(t["started"])
    return f"{t['name']} (open since {since} UTC)" + "".join(f"\n- {n}" for n in ns)
