"""ctxd as a Model Context Protocol server over stdio (the official ``mcp`` SDK, v2).

Needs the optional extra: ``pip install 'ctxd[mcp]'``. Importing this module
imports ``mcp``; ``ctxd.commands.mcp`` turns a missing SDK into one ``ctxd:``
line. The server serves one project, the one of its working directory (or the
directory given), located once at start; the store is opened per request, so
the server sees what hooks and other ctxd commands write meanwhile, and holds
no database connection between calls.

Five tools (every tool schema costs tokens on every turn of the client, so
they are few, with short descriptions): get_context, search_history,
read_output, add_fact, handoff. Two resources: ctxd://project/context (the
context.md view, rendered fresh) and ctxd://handoff/latest (the newest
archive, JSON). One prompt: teach.

Failures a user can act on (``CtxdError``: no store yet, no such message, no
handoff yet) come back as MCP tool errors (``isError``) or protocol errors
with the message; anything else is logged to ctxd's log file and reported as
``internal error: ...``. The server process never dies of a request.
"""

import functools
import os
from typing import Annotated, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import INTERNAL_ERROR, INVALID_PARAMS, ToolAnnotations
from pydantic import Field

from ctxd import __version__, boundary
from ctxd.errors import CtxdError, ExitCode, NotFoundError
from ctxd.isotime import format_minute

NAME = "ctxd"
CONTEXT_URI = "ctxd://project/context"
HANDOFF_URI = "ctxd://handoff/latest"
READ_MAX = 40000  # characters read_output returns per call
SEARCH_TRIM = 300
SOURCE = "mcp"

INSTRUCTIONS = (
    "ctxd keeps this project's AI conversation memory. get_context gives the current context "
    "(facts, summary, recent turns); search_history and read_output reach older turns and full tool "
    "outputs; add_fact records something to keep; handoff packs the session for the next one."
)


def _errors(error, not_found, passthrough):
    """A decorator mapping what a handler raises through ctxd.boundary to the SDK's error.

    ``error(message)`` / ``not_found(message)`` build the exception to raise
    (``not_found`` for a ``NotFoundError``); *passthrough* are the SDK's own
    errors, raised as they are. A bug is logged under ``mcp <handler>`` and
    the client gets ``internal error: ...`` (the server never dies of a request).
    """

    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except passthrough:
                raise
            except Exception as e:
                f = boundary.failure(e, f"mcp {fn.__name__}")
                raise (not_found if f.not_found else error)(f.message or f.reason) from None

        return wrapper

    return decorate


_tool_errors = _errors(ToolError, ToolError, (ToolError, MCPError))
_resource_errors = _errors(ResourceError, ResourceNotFoundError, (ResourceError, MCPError))
_prompt_errors = _errors(lambda m: MCPError(INTERNAL_ERROR, m), lambda m: MCPError(INVALID_PARAMS, m), MCPError)


# -- the work, independent of the SDK (each call opens and closes the store) -------------

def _memory(project):
    from ctxd.memory.core import ProjectMemory

    return ProjectMemory(project)


def context_markdown(project, budget=4000, query=None):
    from ctxd.memory.context import render_formats

    with _memory(project) as mem:
        ctx = mem.context(budget=budget, mode="auto", query=query or None)
    return render_formats.to_markdown(ctx, f"Conversation context: {os.path.basename(project.root)}")


def _when(ts):
    return format_minute(ts)


def search_text(project, query, limit=10):
    if not query.strip():
        raise CtxdError("give a non-empty query", ExitCode.USAGE)
    with _memory(project) as mem:
        mem.store(create=False)  # NoStore when nothing was recorded yet
        hits = mem.search(query, limit)
    if not hits:
        return f"no message matches {query!r}"
    lines = [f"{len(hits)} message(s) matching {query!r}, best first (read_output(id) for a whole one):"]
    for m in (h.message for h in hits):
        text = m.content.replace("\n", " ⏎ ")
        if len(text) > SEARCH_TRIM:
            text = text[:SEARCH_TRIM - 1] + "…"
        size = f" [{m.output_chars} chars offloaded]" if m.output_path else ""
        lines.append(f"#{m.id} {_when(m.ts)} {m.role}{size}: {text}")
    return "\n".join(lines)


def read_text(project, mid, start=0, end=None):
    with _memory(project) as mem:
        text = mem.output(mid)
    lo, hi, _ = slice(start, end).indices(len(text))
    hi = max(lo, hi)
    more = ""
    if hi - lo > READ_MAX:
        hi = lo + READ_MAX
        more = f"; more: read_output({mid}, start={hi})"
    return f"[#{mid}: characters {lo}-{hi} of {len(text)}{more}]\n{text[lo:hi]}"


def record_fact(project, kind, text):
    """Record *text* as a fact of *kind* (ProjectMemory.add_fact); return a confirmation.

    It joins the latest session ($CTXD_SESSION when set), so it is searchable and goes
    into handoffs.
    """
    with _memory(project) as mem:
        known, mid, stored = mem.add_fact(text, kind, session=os.environ.get("CTXD_SESSION"), source=SOURCE)
    if known:
        return f"already known (stated in message #{mid}); kept as {kind}: {stored}"
    note = " (secrets redacted)" if stored != " ".join(text.split()) else ""
    return f"recorded {kind} as message #{mid}{note}: {stored}"


def make_handoff(project):
    from ctxd.handoff.core import ProjectHandoffs

    with _memory(project) as mem:
        hid, path, a = ProjectHandoffs(mem).handoff()
    return f"{path}\n" + handoff_summary(hid, a)


def handoff_summary(hid, a):
    t, p = a.get("topic") or {}, a.get("progress") or {}
    fp = a.get("context_footprint") or {}
    open_q = [q for q in a.get("questions") or [] if isinstance(q, dict) and q.get("status") == "open"]
    lines = [f"archive {hid} (session {a.get('session_id') or '?'}, {a.get('created_at', '')})",
             f"topic: {t.get('title') or '?'}" + (f" ({t['stage']})" if t.get("stage") else "")]
    if p.get("in_progress"):
        lines.append(f"in progress: {p['in_progress']}")
    if p.get("next_up"):
        lines.append("next: " + "; ".join(str(x) for x in p["next_up"][:5]))
    lines.append(f"{len(a.get('key_points') or [])} key points, {len(open_q)} open questions, "
                 f"{len(a.get('facts') or [])} facts; {fp.get('tokens_compressed_from', 0)} -> "
                 f"{fp.get('tokens_compressed_to', 0)} tokens")
    return "\n".join(lines)


def project_context(project):
    with _memory(project) as mem:
        return mem.render()


def latest_handoff(project):
    from ctxd.handoff import archive

    got = archive.latest(project.context_dir)
    if got is None:
        raise NotFoundError(f"no handoff yet in {archive.handoff_dir(project.context_dir)} "
                            "(create one with the handoff tool or `ctxd handoff`)")
    return archive.dumps(got[2])


def teach_prompt(project, topic=None, focus=None):
    from ctxd.handoff import archive
    from ctxd.handoff.core import ProjectHandoffs

    got = archive.latest(project.context_dir)
    if got is None:
        raise NotFoundError("no handoff archive to teach from yet (create one with the handoff tool or "
                            "`ctxd handoff`)")
    hid, _path, a = got
    with _memory(project) as mem:  # as `ctxd teach`, but nothing recorded and no store created
        return ProjectHandoffs(mem).teach_prompt(hid, a, topic=topic, focus=focus, record=False)


# -- the MCP server -------------------------------------------------------------------------

def compact_schema(schema):
    """The tool input schema without what costs tokens and tells the model nothing:
    pydantic's titles, and ``anyOf [X, null]`` with ``default: null`` for an optional
    argument (it is simply not required). Arguments are still validated by the tool's
    pydantic model, which accepts an explicit null."""
    if isinstance(schema, list):
        return [compact_schema(x) for x in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for k, v in schema.items():
        if k == "title" and isinstance(v, str):
            continue
        if k == "properties" and isinstance(v, dict):
            out[k] = {name: compact_schema(prop) for name, prop in v.items()}
            continue
        out[k] = compact_schema(v)
    alts = out.get("anyOf")
    if isinstance(alts, list) and len(alts) == 2 and {"type": "null"} in alts:
        out.pop("anyOf")
        out = {**[a for a in alts if a != {"type": "null"}][0], **out}
        if out.get("default", 0) is None:
            out.pop("default")
    return out


def _tools(project):
    """The five tools, as SDK Tool objects with compact schemas."""
    from mcp.server.mcpserver.tools import Tool

    def get_context(budget: Annotated[int, Field(ge=64, description="tokens")] = 4000,
                    query: Annotated[str | None, Field(description="also pull in older turns matching this")] = None,
                    ) -> str:
        """This project's conversation context (markdown): facts kept verbatim and current, a summary of older turns, recent turns."""
        return context_markdown(project, budget, query)

    def search_history(query: str, limit: Annotated[int, Field(ge=1, le=50)] = 10) -> str:
        """Search this project's recorded conversation, best match first (plain words, any order): id, time, role, trimmed text."""
        return search_text(project, query, limit)

    def read_output(id: int, start: int = 0, end: int | None = None) -> str:
        """The full text of message `id` (offloaded tool outputs too), characters [start:end] as a Python slice, at most 40000 per call."""
        return read_text(project, id, start, end)

    def add_fact(kind: Literal["preference", "requirement", "background", "todo"],
                 text: Annotated[str, Field(description="one statement, verbatim")]) -> str:
        """Record a fact to keep in this project's context from now on."""
        return record_fact(project, kind, text)

    def handoff() -> str:
        """Pack where this project's conversation stands into a new handoff archive; returns its path and a summary."""
        return make_handoff(project)

    ro = ToolAnnotations(read_only_hint=True)
    tools = []
    for fn, annotations in ((get_context, ro), (search_history, ro), (read_output, ro), (add_fact, None),
                            (handoff, None)):
        tool = Tool.from_function(_tool_errors(fn), annotations=annotations, structured_output=False)
        tool.parameters = compact_schema(tool.parameters)
        tools.append(tool)
    return tools


def create_server(root=None):
    """An MCPServer for the project at *root* (default: the working directory)."""
    from ctxd.memory.project import locate

    project = locate(cwd=root)
    server = MCPServer(NAME, version=__version__, instructions=INSTRUCTIONS, log_level="WARNING",
                      tools=_tools(project))

    @server.resource(CONTEXT_URI, name="context", mime_type="text/markdown",
                     description="This project's context.md, rendered now")
    @_resource_errors
    def context_resource() -> str:
        return project_context(project)

    @server.resource(HANDOFF_URI, name="handoff", mime_type="application/json",
                     description="The newest handoff archive of this project")
    @_resource_errors
    def handoff_resource() -> str:
        return latest_handoff(project)

    @server.prompt(name="teach", description="A tutor prompt built from the newest handoff archive")
    @_prompt_errors
    def teach(topic: str | None = None, focus: str | None = None) -> str:
        return teach_prompt(project, topic, focus)

    return server


def run(root=None):
    """Serve over stdio until the client closes standard input."""
    create_server(root).run("stdio")
