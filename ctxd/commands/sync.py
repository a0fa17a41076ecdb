"""ctxd sync: share the project's memory through git (refs/ctxd/memory on its remotes)."""

import json

import click

from ctxd.isotime import format_minute
from ctxd.termtext import visible


def _echo(line, err=False):
    """Echo one line, its control characters shown (segment names, authors and hosts on the
    ref are anyone-who-can-push's words), even when the output is not a terminal."""
    click.echo(visible(str(line)), err=err)


def _sync():
    from ctxd.handoff import archive
    from ctxd.memory.core import ProjectMemory

    mem = ProjectMemory.at()
    return mem, mem.sync(report=lambda line: _echo(f"ctxd: {line}", err=True), save_handoff=archive.save)


def _ago(ts):
    return "never" if not ts else f"{format_minute(ts)} UTC"


def _pulled(stats):
    bits = [f"{stats['messages']} new message{'s' if stats['messages'] != 1 else ''}"]
    for k, word in (("deleted", "deleted"), ("tasks", "tasks"), ("handoffs", "handoffs"), ("facts", "facts")):
        if stats[k]:
            bits.append(f"{stats[k]} {word}")
    if stats["skipped"]:
        bits.append(f"{stats['skipped']} segment{'s' if stats['skipped'] != 1 else ''} skipped")
    return (f"ctxd: pulled from {stats['remote']}: {', '.join(bits)} "
            f"({stats['blobs']} segment{'s' if stats['blobs'] != 1 else ''} read)")


def _pushed(r):
    if not r["commit"] and not r["pushed"]:
        return f"ctxd: nothing new to push to {r['remote']}"
    what = (f"{r['items']} item{'s' if r['items'] != 1 else ''} in {r['blobs']} new segment"
            f"{'s' if r['blobs'] != 1 else ''} ({r['bytes']:,} bytes)") if r["commit"] else "earlier segments"
    retry = f" after {r['attempts'] - 1} retr{'ies' if r['attempts'] > 2 else 'y'}" if r["attempts"] > 1 else ""
    return f"ctxd: pushed {what} to {r['remote']}{retry}"


@click.group(invoke_without_command=True)
@click.option("--remote", default=None, help="The git remote (default: the one set by init, the branch's, origin).")
@click.pass_context
def sync(ctx, remote):
    """Share this project's memory through git: pull, then push (see the subcommands).

    The memory travels as compressed, append-only segments on refs/ctxd/memory,
    through the repository's own remotes and your git credentials; your branches,
    index and working tree are never touched. Off until `ctxd sync init` (or
    [context] share = "git" in a trusted .contextrc).
    """
    if ctx.invoked_subcommand is not None:
        ctx.obj = remote
        return
    mem, s = _sync()
    with mem:
        pulled, pushed = s.sync(remote)
    _echo(_pulled(pulled))
    _echo(_pushed(pushed))


def _remote(ctx, remote):
    return remote or ctx.obj


@sync.command()
@click.option("--remote", default=None, help="Sync through this remote (default: the branch's, origin, the only one).")
@click.option("--outputs", is_flag=True, help="Send offloaded tool outputs whole (default: their preview).")
@click.option("--off", is_flag=True, help="Stop sharing (what was pushed stays on the remote).")
@click.pass_context
def init(ctx, remote, outputs, off):
    """Switch sharing on for this project (recorded in its store)."""
    mem, s = _sync()
    with mem:
        if off:
            s.off()
            _echo("ctxd: sharing is off for this project (nothing is sent; pushed segments stay on the remote)")
            return
        chosen = s.init(_remote(ctx, remote), outputs)
    where = f"through remote {chosen}" if chosen else "(no remote yet: git remote add origin URL)"
    _echo(f"ctxd: sharing this project's memory {where} on refs/ctxd/memory; run: ctxd sync")


@sync.command()
@click.option("--remote", default=None)
@click.pass_context
def push(ctx, remote):
    """Send what is new (messages, facts, tasks, handoffs, deletions) to the remote."""
    mem, s = _sync()
    with mem:
        r = s.push(_remote(ctx, remote))
    _echo(_pushed(r))


@sync.command()
@click.option("--remote", default=None)
@click.pass_context
def pull(ctx, remote):
    """Fetch the remote's memory, merge it, import what is new."""
    mem, s = _sync()
    with mem:
        stats = s.pull(_remote(ctx, remote))
    _echo(_pulled(stats))


@sync.command()
@click.option("--remote", default=None)
@click.option("--fetch", is_flag=True, help="Fetch the remote's ref first (otherwise: as of the last sync).")
@click.option("--json", "json_", is_flag=True)
@click.pass_context
def status(ctx, remote, fetch, json_):
    """What is ahead and behind, when it last synced, what is private."""
    mem, s = _sync()
    with mem:
        st = s.status(fetch=fetch, remote=_remote(ctx, remote))
    if json_:
        _echo(json.dumps(st))
        return
    _echo(f"sharing:   {'on' if st['enabled'] else 'off'} ({st['how']})")
    if st["remote"]:
        _echo(f"remote:    {st['remote']} {st['url'] or ''}".rstrip())
    else:
        _echo(f"remote:    none ({st.get('remote_problem', '')})")
    local = st["local"][:12] if st["local"] else "none"
    theirs = st["remote_ref"][:12] if st["remote_ref"] else "none"
    _echo(f"ref:       {st['ref']} here {local}, remote {theirs} (as of the last {'fetch' if fetch else 'sync'})")
    _echo(f"ahead:     {st['ahead']} commit{'s' if st['ahead'] != 1 else ''} to push; "
               f"{st['unsent_messages']} message{'s' if st['unsent_messages'] != 1 else ''} and "
               f"{st['unsent_tombstones']} deletion{'s' if st['unsent_tombstones'] != 1 else ''} not sent yet")
    _echo(f"behind:    {st['behind']} commit{'s' if st['behind'] != 1 else ''} to pull; "
               f"{st['unimported_segments']} segment{'s' if st['unimported_segments'] != 1 else ''} not imported yet")
    _echo(f"last push: {_ago(st['last_push'])}; last pull: {_ago(st['last_pull'])}")
    if st["private"]:
        _echo("private:   " + ", ".join(f"{p['session']} ({p['messages']} messages)" for p in st["private"]))
    else:
        _echo("private:   no session (ctxd chat private SESSION keeps one here)")
    for a in st["authors"]:
        _echo(f"from:      {a['author']} ({a['machine']}): {a['messages']} messages")
    for b in st["skipped"]:
        _echo(f"skipped:   {b['path']} ({b['oid'][:12]}): unreadable")
    if st["shallow"]:
        _echo("note:      shallow clone: the memory ref is fetched whole, the branches stay shallow")
