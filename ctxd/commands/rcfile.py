"""ctxd init / edit / status: write, change and summarise .contextrc settings."""

import json
import os

import click

from ctxd.tab_complete import DIR

from ctxd.activation import contextrc
from ctxd.activation.detectors import detect
from ctxd.activation.allow import allow_rc
from ctxd.errors import ConfigError, CtxdError

TEMPLATE_HEAD = """\
# .contextrc for {name}: settings ctxd applies when you cd here.
# Reference: docs/contextrc.md.
# Nothing here applies until you trust it: `ctxd allow` (any edit needs a new allow,
# `ctxd edit` validates and allows in one go).

[ctxd]
inherit = true            # false: parent directories' .contextrc files do not apply

[env]
# NAME = "value"          # ~ and ${{VAR}} / ${{VAR:-default}} are expanded; $$ is a literal $
# OLD_VAR = false         # unset a variable while inside
{files_line}{env_lines}
[path]
# prepend = ["bin"]       # relative to this file's directory
# append = []

[detect]
# Built-in detectors found here: {types}. Turn one off with e.g. node = false
{detect_lines}
[hooks]
# on_enter = "echo entering"   # run by /bin/sh in the project root, with its environment
# on_leave = "echo leaving"    # runs before the environment is restored
# timeout = 5                  # seconds; a hung hook is stopped and reported

# [branch."release/*".env]     # applied while the git branch matches the glob
# AWS_PROFILE = "prod"

[context]
# store = "data"          # "project" keeps the conversation store in .ctxd/ here (git-excluded)
# model = "claude-sonnet-4-5"
# budget = 8000           # tokens for the assembled context
"""

TYPE_HINTS = {
    "python": '# PYTHONPATH = "${CTXD_ROOT}/src"',
    "node": '# NODE_OPTIONS = "--max-old-space-size=4096"',
    "go": '# CGO_ENABLED = "0"',
    "rust": '# RUST_BACKTRACE = "1"',
    "ruby": '# BUNDLE_PATH = "vendor/bundle"',
    "java": '# JAVA_TOOL_OPTIONS = "-Xmx2g"',
    "php": '# APP_ENV = "local"',
    "deno": '# DENO_DIR = ".deno"',
    "elixir": '# MIX_ENV = "dev"',
}


DOTENV_NAMES = (".env", ".env.local")  # offered by `ctxd init` when they exist, in this order


def env_files_found(root):
    return [n for n in DOTENV_NAMES if os.path.isfile(os.path.join(root, n))]


def files_line(found, load):
    """The [env] files line: active when *load*, else a commented example (naming what exists)."""
    listed = ", ".join(f'"{n}"' for n in (found or [".env"]))
    if load:
        return f"files = [{listed}]  # .env files to load (python-dotenv syntax); [env] keys below win\n"
    return f"# files = [{listed}]  # .env files to load (python-dotenv syntax), relative to this file\n"


def render_template(root, load_env_files=False):
    plan = detect(root, dict(os.environ), apply=False)
    names = [t for t, _ in plan.types]
    env_lines = "".join(TYPE_HINTS[n] + "\n" for n in names if n in TYPE_HINTS)
    detect_lines = "".join(f"# {n} = true\n" for n in names)
    return TEMPLATE_HEAD.format(name=os.path.basename(root.rstrip("/")) or root, types=", ".join(names) or "none",
                                env_lines=env_lines, detect_lines=detect_lines,
                                files_line=files_line(env_files_found(root), load_env_files))


def _dir(directory):
    from ctxd.activation.export import logical_pwd

    here = logical_pwd(dict(os.environ))
    return os.path.normpath(os.path.join(here, os.path.expanduser(directory))) if directory else here


@click.command()
@click.argument("directory", required=False, type=DIR)
@click.option("--force", is_flag=True, help="Overwrite an existing .contextrc.")
@click.option("--dotenv/--no-dotenv", "dotenv", default=None,
              help="Load the .env (and .env.local) found here ([env] files). Default: asked when "
                   "one exists and stdin is a terminal, else not loaded.")
def init(directory, force, dotenv):
    """Write a commented .contextrc template for DIRECTORY's project types (and allow it).

    When a .env (or .env.local) exists, init offers to load it: `files = [".env"]` in
    [env]. Its variables then reach every command run in the project, AI CLIs included,
    so it asks first (or takes --dotenv / --no-dotenv).
    """
    from ctxd.activation.fileio import atomic_write

    d = _dir(directory)
    if not os.path.isdir(d):
        raise CtxdError(f"no such directory: {d}", 4)
    path = os.path.join(d, contextrc.FILENAME)
    if os.path.exists(path) and not force:
        raise CtxdError(f"{path} already exists (ctxd edit changes it; --force replaces it)")
    found = env_files_found(d)
    load = bool(dotenv) and bool(found)
    if found and dotenv is None and click.get_text_stream("stdin").isatty():
        them = " and ".join(found)
        load = click.confirm(f"ctxd: {them} found here. Load {'them' if len(found) > 1 else 'it'} whenever you "
                             "are in this project ([env] files)? Every command run here, AI CLIs included, "
                             "then sees its variables", default=True)
    text = render_template(d, load_env_files=load)
    atomic_write(path, text, mode=0o644)
    allow_rc(path, text.encode())
    click.echo(f"ctxd: wrote and allowed {path}")
    if found and load:
        click.echo(f"ctxd: {' and '.join(found)} loaded here ([env] files in {path})")
    elif found and dotenv is None:
        click.echo(f"ctxd: {' and '.join(found)} not loaded: uncomment files = [...] in [env] "
                   "(then ctxd allow), or run ctxd init --force --dotenv")


@click.command()
@click.argument("directory", required=False, type=DIR)
def edit(directory):
    """Open DIRECTORY's .contextrc in $EDITOR; allow it when it is valid.

    An invalid file is not allowed: the error is shown and you can edit again.
    """
    from ctxd.activation.allow import target_dir

    try:
        d = target_dir(directory)
    except CtxdError:
        d = _dir(directory)
    path = os.path.join(d, contextrc.FILENAME)
    if not os.path.exists(path):
        from ctxd.activation.fileio import atomic_write

        atomic_write(path, render_template(d), mode=0o644)
    while True:
        click.edit(filename=path)
        with open(path, "rb") as f:
            data = f.read()
        try:
            allow_rc(path, data)
        except ConfigError as e:
            if not click.get_text_stream("stdin").isatty():
                # one line, as for every error: where the mistake is, and that nothing was allowed
                raise CtxdError(f"{e.message} (not allowed)", e.exit_code) from None
            click.echo(f"ctxd: {e.message}", err=True)
            if click.confirm("Edit again?", default=True):
                continue
            raise CtxdError(f"{path} was not allowed (invalid)", e.exit_code) from None
        click.echo(f"ctxd: allowed {path}")
        return


def status_info(directory=None):
    from ctxd.activation import planner
    from ctxd.activation.detectors import find_root
    from ctxd.activation.envdiff import restore
    from ctxd.activation.state import STATE_VAR, decode
    from ctxd.errors import StateError

    environ = dict(os.environ)
    d = _dir(directory)
    root = find_root(d)
    if not root:
        return {"root": None, "status": ""}
    old = None
    try:
        old = decode(environ[STATE_VAR]) if environ.get(STATE_VAR) else None
    except StateError:
        pass
    plan = planner.build(root, restore(environ, old), environ)
    return {
        "root": root,
        "name": os.path.basename(root.rstrip("/")) or "/",
        "types": [t for t, _ in plan.types],
        "trusted": plan.trusted,
        "blocked": [p for p, st, _ in plan.files if st in ("untrusted", "changed")],
        "denied": [p for p, st, _ in plan.files if st == "denied"],
        "error": next((err for _, _, err in plan.files if err), None),
        "status": plan.status,
    }


@click.command()
@click.argument("directory", required=False, type=DIR)
@click.option("--json", "json_", is_flag=True, help="Machine-readable output.")
def status(directory, json_):
    """One line for prompts: project name, types and trust state.

    Prompts need not run this: the hook exports the same line as CTXD_STATUS.
    """
    info = status_info(directory)
    if json_:
        click.echo(json.dumps(info, ensure_ascii=False))
    elif info["status"]:
        click.echo(info["status"])
