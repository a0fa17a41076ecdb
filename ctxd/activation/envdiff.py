"""The environment as values: restore a snapshot, apply a plan, diff.

Pure functions over plain dicts (name -> value, a missing key is unset), so
the whole transition is testable without a shell.
"""

from ctxd.activation.state import State

PATH = "PATH"


def split_path(value):
    return [] if value is None or value == "" else value.split(":")


def join_path(entries):
    return ":".join(entries)


def remove_once(entries, remove):
    """Remove one occurrence of each entry in *remove* (the first one found).

    A copy the user added on purpose survives; so does any reordering they
    made, since nothing else moves.
    """
    out = list(entries)
    for r in remove:
        try:
            out.remove(r)
        except ValueError:
            pass  # the user removed it already
    return out


def restore(environ, state, keep_path=()):
    """The environment as it would be had ctxd never activated *state*.

    A variable still holding the value ctxd gave it gets its snapshot value
    back; one the user changed since keeps the user's value. PATH loses only
    the entries ctxd added (except those in *keep_path*, which the next
    activation re-uses in place).
    """
    env = dict(environ)
    if state is None:
        return env
    for name, old in state.snap.items():
        if name == PATH:
            continue
        if env.get(name) == state.ours.get(name):
            if old is None:
                env.pop(name, None)
            else:
                env[name] = old
    if state.path_added and PATH in env:
        entries = remove_once(split_path(env[PATH]), [e for e in state.path_added if e not in keep_path])
        if not entries and state.path_was_unset:
            env.pop(PATH)
        else:
            env[PATH] = join_path(entries)
    return env


def apply(base, plan, extra_sets=(), kept=()):
    """Apply *plan* on top of *base*; return (target env, new State).

    *kept* are PATH entries of the previous activation of the same root that
    ``restore`` left in place: they stay where they are and stay ours.
    """
    target = dict(base)
    snap, ours = {}, {}

    def change(name, value):
        if name not in snap:
            snap[name] = base.get(name)
        if value is None:
            target.pop(name, None)
        else:
            target[name] = value
        ours[name] = value

    for name, value, _source, only_if_unset in list(plan.sets) + list(extra_sets):
        if only_if_unset and base.get(name) is not None:
            continue
        if name not in snap and base.get(name) == value:
            continue  # already so (or unsetting what is not set): nothing to undo later
        change(name, value)

    added = []
    current = split_path(target.get(PATH))
    front = []  # [(where in current, entry)]: a new entry goes behind the kept ones before it
    at = 0  # in the plan (a re-export of the same root), so a new entry never jumps ahead of
    for entry, _source in plan.prepend:  # an earlier one (a parent root's behind the venv)
        if not entry or entry in added:
            continue
        if entry in current:
            if entry in kept:
                added.append(entry)
                at = max(at, current.index(entry) + 1)
            continue  # already on PATH: never a duplicate
        front.append((at, entry))
        added.append(entry)
    back = []
    for entry, _source in getattr(plan, "append", ()):
        if not entry or entry in added or entry in back:
            continue
        if entry in current:
            if entry in kept:
                added.append(entry)
            continue
        back.append(entry)
        added.append(entry)
    path_was_unset = PATH not in base
    if front or back:
        entries = list(current)
        for where, entry in reversed(front):  # from the back: earlier positions stay valid
            entries.insert(where, entry)
        target[PATH] = join_path(entries + back)
    state = State(plan.root, snap, ours, added, path_was_unset)
    return target, state


def changed_names(before, after, names):
    """[(name, new value or None)] for every name in *names* that differs."""
    out = []
    for name in names:
        if before.get(name) != after.get(name):
            out.append((name, after.get(name)))
    return out
