import json
import os

import click

from ctxd.tab_complete import DIR

SCHEMA_VERSION = 1


def explain(directory, environ):
    """What ctxd does (or would do) for *directory*: a JSON-ready dict."""
    from ctxd.activation import detectors, pins
    from ctxd.activation.export import logical_pwd, transition
    from ctxd.activation.state import STATE_VAR, decode
    from ctxd.errors import StateError

    base_dir = logical_pwd(environ)
    directory = os.path.normpath(os.path.join(base_dir, os.path.expanduser(directory))) if directory else base_dir
    if not os.path.isdir(directory):
        from ctxd.errors import NotFoundError

        raise NotFoundError(f"no such directory: {directory}")
    notes = []
    old = None
    if environ.get(STATE_VAR):
        try:
            old = decode(environ[STATE_VAR])
        except StateError as e:
            notes.append(f"{e.message}: ignoring it")
    t = transition(environ, directory, old_state=old)
    info = {
        "schema_version": SCHEMA_VERSION,
        "directory": directory,
        "root": t.plan.root if t.plan else None,
        "active": bool(old and t.plan and old.root == t.plan.root),
        "active_root": old.root if old else None,
        "types": [],
        "pins": [],
        "toolchains": [],
        "env": [],
        "path": [],
        "skipped": [],
        "notes": notes,
        "context_dir": None,
        "watch": [],
        "files": [],
        "trusted": False,
        "branch": None,
        "hooks": {"on_enter": [], "on_leave": []},
        "context": {},
        "status": "",
        "warnings": [],
    }
    if not t.plan:
        top = detectors.ceiling(directory, environ)
        above = detectors.find_root(os.path.dirname(top), environ={}) if top else None
        if above:  # what a user coming from direnv or an older ctxd may expect to be found
            info["notes"].append(f"no project marker from here up to $HOME ({top}), where the search "
                                 f"stops; {above}, above it, holds one but does not count here")
        else:
            info["notes"].append("no project marker at or above this directory")
        return info
    plan = t.plan
    info["types"] = [{"name": n, "markers": m} for n, m in plan.types]
    info["pins"] = [{"tool": a, "version": v, "file": f} for a, v, f in detectors.read_pins(plan.root)]
    info["toolchains"] = [dict(p.to_dict(), text=pins.describe(p, plan.trusted)) for p in plan.pins]
    for name, value, source, only_if_unset in plan.sets:
        if name in t.state.snap:
            before = t.state.snap[name]
            action = "unset" if value is None else ("set" if before is None else "change")
            info["env"].append({"name": name, "action": action, "value": value,
                                "previous": before, "source": source})
        elif only_if_unset:
            info["skipped"].append({"name": name, "reason": f"already set to {t.base.get(name)!r}; yours is kept",
                                    "source": source})
        elif value is None:
            info["skipped"].append({"name": name, "reason": "not set; nothing to unset", "source": source})
    for entry, source in plan.prepend:
        status = "added" if entry in t.state.path_added else "already-present"
        info["path"].append({"entry": entry, "source": source, "position": "front", "status": status})
    info["notes"].extend(plan.notes)
    envrc_dir = (environ.get("DIRENV_DIR") or "").lstrip("-")  # direnv writes "-/path"
    if envrc_dir and (directory + "/").startswith(envrc_dir.rstrip("/") + "/"):
        info["notes"].append(f"direnv has {os.path.join(envrc_dir, '.envrc')} loaded: its changes stay (ctxd never "
                             "undoes them), and leaving undoes both (docs/shells.md: Next to other tools)")
    info["context_dir"] = t.target.get("CTXD_CONTEXT_DIR")
    info["watch"] = list(dict.fromkeys(plan.watch))
    info["files"] = [{"path": p, "status": st, "error": err} for p, st, err in plan.files]
    info["trusted"] = plan.trusted
    info["branch"] = plan.branch
    info["hooks"] = {"on_enter": plan.on_enter, "on_leave": plan.on_leave}
    info["context"] = plan.context
    info["status"] = plan.status
    info["warnings"] = plan.warnings
    for e, _src in plan.append:
        info["path"].append({"entry": e, "source": _src, "position": "end",
                             "status": "added" if e in t.state.path_added else "already-present"})
    return info


def render_text(info):
    from ctxd.termtext import visible

    lines = []

    def add(line):  # each is one line: a newline or escape in a name is shown, not obeyed
        lines.append(visible(line))
    add(f"directory    {info['directory']}")
    if not info["root"]:
        add("project      none")
        for n in info["notes"]:
            add(f"note         {n}")
        return "\n".join(lines) + "\n"
    state = "active in this shell" if info["active"] else "not active in this shell"
    add(f"project root {info['root']}  ({state})")
    for t in info["types"]:
        add(f"type         {t['name']:<8} found {', '.join(t['markers'])}")
    for p in info["pins"]:
        add(f"pin          {p['tool']:<8} {p['version']}  ({p['file']})")
    for p in info["toolchains"]:
        add(f"toolchain    {p['tool']:<8} {p['text']}")
        for b in p["broken"]:
            add(f"skipped      {p['tool']:<8} {b['dir']}  ({b['manager']}: {b['reason']}; broken install)")
    for e in info["env"]:
        if e["action"] == "unset":
            what = f"unset (was {e['previous']!r})"
        elif e["action"] == "change":
            what = f"= {e['value']!r} (was {e['previous']!r})"
        else:
            what = f"= {e['value']!r}"
        add(f"env          {e['name']} {what}  <- {e['source']}")
    for s in info["skipped"]:
        add(f"kept         {s['name']}: {s['reason']}  <- {s['source']}")
    for f in info["files"]:
        extra = f"  ERROR {f['error']}" if f["error"] else ""
        add(f"contextrc    {f['path']}  [{f['status']}]{extra}")
    add(f"root trusted {'yes' if info['trusted'] else 'no (detected PATH entries and variables withheld)'}")
    if info["branch"]:
        add(f"git branch   {info['branch']}")
    for k in ("on_enter", "on_leave"):
        for c in info["hooks"][k]:
            add(f"hook         {k}: {c}")
    for p in info["path"]:
        verb = "PATH +" if p["status"] == "added" else "PATH ="
        extra = "" if p["status"] == "added" else "  (already on PATH, not duplicated)"
        add(f"{verb:<12} {p['entry']}  <- {p['source']}{extra}")
    add(f"context dir  {info['context_dir']}")
    for w in info["warnings"]:
        add(f"warning      {w}")
    for n in info["notes"]:
        add(f"note         {n}")
    return "\n".join(lines) + "\n"


@click.command()
@click.argument("directory", required=False, type=DIR)
@click.option("--json", "json_", is_flag=True, help="Machine-readable output (schema in docs/commands.md).")
def show(directory, json_):
    """Explain what ctxd does for DIRECTORY (default: here) and why.

    The project root, each detected type and the marker that proved it,
    version pins, every variable set, changed or unset and every PATH entry
    added, the context directory and the files watched for changes.
    """
    info = explain(directory, dict(os.environ))
    if json_:
        click.echo(json.dumps(info, indent=2, ensure_ascii=False))
    else:
        click.echo(render_text(info), nl=False)
