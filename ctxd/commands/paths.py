"""``ctxd paths``: every path ctxd resolved, for this user and this directory."""

import json

import click

SCHEMA_VERSION = 1

# key -> label for the human listing, in display order
LABELS = {
    "config_dir": "config dir",
    "config_file": "config file",
    "data_dir": "data dir",
    "state_dir": "state dir",
    "cache_dir": "cache dir",
    "trust_dir": "trust store",
    "stamp_dir": "stamp dir",
    "log_file": "log file",
    "project_root": "project root",
    "context_dir": "context dir",
    "store": "store",
    "interpreter": "hook interpreter",
}


def resolve(environ=None):
    """{key: path} for every key in LABELS (project keys None when no project is found)."""
    from ctxd import paths
    from ctxd.shells.base import export_command

    out = dict(paths.all_paths(environ))
    out.update(project_root=None, context_dir=None, store=None)
    try:
        from ctxd.memory.core import ProjectMemory

        mem = ProjectMemory.at(environ=None if environ is None else dict(environ))
        out["project_root"] = mem.root
        out["context_dir"] = mem.context_dir
        out["store"] = mem.paths.store
    except Exception:  # an unreadable directory or broken .contextrc: the rest still helps
        pass
    out["interpreter"] = export_command()[0]
    return {k: out.get(k) for k in LABELS}


@click.command()
@click.option("--json", "json_", is_flag=True, help="Machine-readable output.")
def paths(json_):
    """Show every path ctxd uses: config, data, state, cache, trust store, log,
    this project's root and context directory, the interpreter the hook runs.

    CTXD_CONFIG_DIR, CTXD_DATA_DIR, CTXD_STATE_DIR and CTXD_CACHE_DIR override
    the base directories (XDG variables are honoured otherwise).
    """
    resolved = resolve()
    if json_:
        click.echo(json.dumps(dict(schema_version=SCHEMA_VERSION, **resolved), ensure_ascii=False))
        return
    width = max(len(v) for v in LABELS.values())
    for key, label in LABELS.items():
        value = resolved[key]
        click.echo(f"{label:<{width}}  {value if value is not None else '-'}")
