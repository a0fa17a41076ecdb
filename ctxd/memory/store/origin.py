"""Where an item came from, as every renderer shows it: items received through ``ctxd sync``
carry their sender (``author``: the claimed git user.email, "... (unverified)" when the commit
that brought it says otherwise; ``machine``: the claimed host). What was written here has none."""


def label(author, machine=None):
    """"from a@example.com on laptop" for a received item, "" for one written here."""
    if not author:
        return ""
    return f"from {author}" + (f" on {machine}" if machine and machine != "?" else "")


def of(m):
    """label() of a Message or a row with author and machine ("" when it has neither)."""
    try:
        return label(m["author"], m["machine"]) if not hasattr(m, "author") else label(m.author, m.machine)
    except (KeyError, IndexError):
        return ""
