"""The package's architecture, checked on its source with ``ast`` (nothing is imported).

- no import cycle among ctxd modules, lazy (function-level) imports included;
- no module uses a private name (``_x``) of another module;
- no command module imports another command module (``ctxd.cli`` registers them);
- no SQL outside the store modules (``ctxd/memory/store/``);
- ``ctxd/memory/``'s folders are layers (``MEMORY_LAYERS``): a module imports of memory only its
  own folder and lower layers, lazy imports included; a folder (or a module beside them) the
  table does not name fails;
- no module of ctxd is over ``MAX_LINES`` lines;
- ``ctxd/memory/`` imports no adapter (``ctxd/integrations/``, ``ctxd/commands/``, ``ctxd.cli``)
  and nothing built on it (``ctxd/handoff/``);
- ``ctxd/agents/`` (one module per AI tool) imports of ctxd only its own package and what its
  parser and hook handlers need (``AGENTS_MAY_IMPORT``);
- an AI tool's name ("claude", "codex", ...) is written only in ``ctxd/agents/``: what ctxd knows of
  a tool is in its module there (``TOOL_NAMES_ALLOWED`` lists the exceptions).
- ``ctxd/fastpath/`` (the hot paths' speed tricks) imports of ctxd only its own package and what
  the table in its ``__init__`` docstring allows each module.

Each failure lists every violation with its file and line.
"""

import ast
import builtins
import os
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "ctxd"
SQL_METHODS = {"execute", "executemany", "executescript"}


def module_name(path):
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources():
    out = {}
    for dirpath, dirnames, filenames in os.walk(PKG):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
        for f in sorted(filenames):
            if f.endswith(".py"):
                p = Path(dirpath, f)
                out[module_name(p)] = p
    return out


SOURCES = _sources()
_TEXTS = {name: path.read_text(encoding="utf-8") for name, path in SOURCES.items()}
TREES = {name: ast.parse(text, str(SOURCES[name])) for name, text in _TEXTS.items()}
LINES = {name: len(text.splitlines()) for name, text in _TEXTS.items()}


def is_package(name):
    return SOURCES[name].name == "__init__.py"


def where(name, node):
    return f"{SOURCES[name].relative_to(PKG.parent)}:{node.lineno}"


def _base(name, node):
    """The absolute module a ``from ... import`` names (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    parts = name.split(".")
    if not is_package(name):
        parts = parts[:-1]
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join(parts + ([node.module] if node.module else []))


def _with_ancestors(target):
    """Importing a.b.c runs a/__init__, a/b/__init__ and a/b/c: all are imported."""
    parts = target.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def imports(name):
    """(target module, node, imported name or None) for every import of a ctxd module in *name*,
    wherever it is (module level or inside a function)."""
    out = []
    for node in ast.walk(TREES[name]):
        if isinstance(node, ast.Import):
            for alias in node.names:
                out.append((alias.name, node, None))
        elif isinstance(node, ast.ImportFrom):
            base = _base(name, node)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in SOURCES:
                    out.append((sub, node, None))  # a submodule
                else:
                    out.append((base, node, alias.name))
        elif (isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name))
              and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            out.append((node.args[0].value, node, None))  # importlib.import_module("ctxd.x")
    return [(t, n, a) for t, n, a in out if t == "ctxd" or t.startswith("ctxd.")]


def import_graph():
    """{module: {imported module: first import node}}.

    Importing ``a.b.c`` imports the packages ``a`` and ``a.b`` too: they are
    edges, except the importer's own enclosing packages, which are always
    imported before it runs (naming one explicitly, ``from a import x`` in
    ``a.b``, is an edge like any other).
    """
    graph = {}
    for name in SOURCES:
        edges = graph.setdefault(name, {})
        own = set(_with_ancestors(name)[:-1])
        for target, node, _alias in imports(name):
            for t in _with_ancestors(target):
                if t in SOURCES and t != name and (t == target or t not in own):
                    edges.setdefault(t, node)
    return graph


def find_cycles(graph):
    """Every strongly connected component with more than one module, as one concrete cycle each."""
    index, low, stack, on_stack, comps = {}, {}, [], set(), []
    counter = [0]

    def strong(v):  # Tarjan, iterative enough for a package this size
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(set(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    cycles = []
    for comp in comps:
        start = min(comp)
        # the shortest way back to start inside the component (BFS)
        prev, frontier, found = {start: None}, [start], None
        while frontier and found is None:
            nxt = []
            for v in frontier:
                for w in sorted(graph[v]):
                    if w not in comp:
                        continue
                    if w == start:
                        found = v
                        break
                    if w not in prev:
                        prev[w] = v
                        nxt.append(w)
                if found is not None:
                    break
            frontier = nxt
        path, v = [], found
        while v is not None:
            path.append(v)
            v = prev[v]
        path.reverse()
        cycles.append((path + [start], comp))
    return cycles


def describe_cycle(graph, path, comp):
    steps = [f"{a} -> {b} ({where(a, graph[a][b])})" for a, b in zip(path, path[1:])]
    return (f"cycle through {len(comp)} modules ({', '.join(sorted(comp))}):\n    "
            + "\n    ".join(steps))


def test_no_import_cycle():
    graph = import_graph()
    cycles = find_cycles(graph)
    assert not cycles, "import cycles (lazy imports count too):\n  " + "\n  ".join(
        describe_cycle(graph, path, comp) for path, comp in cycles)


def test_the_cycle_finder_finds_a_cycle_and_its_path():
    """The finder itself: a known three-module cycle is found with its path, a tree is not."""
    graph = {"a": {"b": None}, "b": {"c": None}, "c": {"a": None, "d": None}, "d": {}}
    [(path, comp)] = find_cycles(graph)
    assert path == ["a", "b", "c", "a"] and comp == {"a", "b", "c"}
    assert find_cycles({"a": {"b": None, "c": None}, "b": {"c": None}, "c": {}}) == []


def test_lazy_imports_of_the_package_are_edges():
    """Function-level imports are in the graph (a check that the walker sees them)."""
    graph = import_graph()
    # the console script dispatches to the click app only inside main(): a lazy import
    assert "ctxd.cli" in graph["ctxd.fastpath.console_entry"]


def _is_private(attr):
    return attr.startswith("_") and not (attr.startswith("__") and attr.endswith("__"))


def _module_aliases(name):
    """Names bound in *name* to ctxd modules by its imports: {local name: module}."""
    out = {}
    for node in ast.walk(TREES[name]):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("ctxd.") or alias.name == "ctxd":
                    if alias.asname:
                        out[alias.asname] = alias.name
                    else:
                        out[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = _base(name, node)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in SOURCES:
                    out[alias.asname or alias.name] = sub
    return out


def _dotted(node, aliases):
    """The ctxd module an expression like ``engine`` or ``ctxd.memory.context.engine`` names, else None."""
    if isinstance(node, ast.Name):
        return aliases.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value, aliases)
        if base is not None and f"{base}.{node.attr}" in SOURCES:
            return f"{base}.{node.attr}"
    return None


def private_uses():
    found = []
    for name in SOURCES:
        for target, node, alias in imports(name):
            if alias is not None and _is_private(alias) and target != name:
                found.append(f"{where(name, node)}: from {target} import {alias}")
        aliases = _module_aliases(name)
        for node in ast.walk(TREES[name]):
            if isinstance(node, ast.Attribute) and _is_private(node.attr):
                mod = _dotted(node.value, aliases)
                if mod is not None and mod != name and f"{mod}.{node.attr}" not in SOURCES:
                    found.append(f"{where(name, node)}: {mod}.{node.attr}")
    return found


def test_no_module_uses_a_private_name_of_another():
    found = private_uses()
    assert not found, "private names used across modules (make them public or move the code):\n  " + \
        "\n  ".join(found)


def command_imports():
    found = []
    for name in SOURCES:
        if not name.startswith("ctxd.commands.") or is_package(name):
            continue
        for target, node, _alias in imports(name):
            for t in _with_ancestors(target):
                if t.startswith("ctxd.commands.") and t != name and t in SOURCES and not is_package(t):
                    found.append(f"{where(name, node)}: {name} imports {t}")
    return found


def test_no_command_imports_another_command():
    found = command_imports()
    assert not found, ("commands importing commands (ctxd.cli registers commands; shared code belongs "
                       "in the memory core or a module outside ctxd/commands):\n  " + "\n  ".join(found))


def is_store_module(name):
    return name == "ctxd.memory.store" or name.startswith("ctxd.memory.store.")


def sql_uses():
    found = []
    for name in SOURCES:
        if is_store_module(name):
            continue
        sqlite_names = {"sqlite3"}
        connect_names = set()
        for node in ast.walk(TREES[name]):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name == "sqlite3":
                        sqlite_names.add(alias.asname or "sqlite3")
            elif isinstance(node, ast.ImportFrom) and node.module == "sqlite3":
                for alias in node.names:
                    if alias.name == "connect":
                        found.append(f"{where(name, node)}: from sqlite3 import connect")
                        connect_names.add(alias.asname or alias.name)
        for node in ast.walk(TREES[name]):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr in SQL_METHODS:
                found.append(f"{where(name, node)}: .{f.attr}(...)")
            elif (isinstance(f, ast.Attribute) and f.attr == "connect" and isinstance(f.value, ast.Name)
                  and f.value.id in sqlite_names):
                found.append(f"{where(name, node)}: sqlite3.connect(...)")
            elif isinstance(f, ast.Name) and f.id in connect_names:
                found.append(f"{where(name, node)}: connect(...)")
    return found


def test_no_sql_outside_the_store_modules():
    found = sql_uses()
    assert not found, (f"SQL outside ctxd/memory/store/ ({len(found)}): add a store method and call it "
                       "(a foreign database, like llm's logs.db, gets a reader in the store layer too):\n  "
                       + "\n  ".join(found))


ADAPTERS = ("ctxd.integrations", "ctxd.commands", "ctxd.cli")
# built on the memory core: it calls the core, the core never calls it
ABOVE_MEMORY = ADAPTERS + ("ctxd.handoff",)


def _within(target, packages):
    return any(target == p or target.startswith(p + ".") for p in packages)


def memory_upward_imports():
    """Imports (module level or in a function) by a memory module of what is built on it: an
    adapter or the handoff package (ABOVE_MEMORY)."""
    found = []
    for name in SOURCES:
        if not _within(name, ("ctxd.memory",)):
            continue
        for target, node, _alias in imports(name):
            if _within(target, ABOVE_MEMORY):
                found.append(f"{where(name, node)}: {name} imports {target}")
    return found


def test_memory_imports_nothing_built_on_it():
    found = memory_upward_imports()
    assert not found, ("the memory core importing what is built on it (integrations, commands, cli, handoff), "
                       "lazy imports included: move the code the core needs below it (ctxd/agents/, "
                       "ctxd/memory/) or have the caller pass it in:\n  " + "\n  ".join(found))


# ctxd/memory/'s layers: {group: layer}, bottom (0) to top. A group is a folder of ctxd/memory/, or
# "top" for the modules beside the folders (MEMORY_TOP). A module imports of ctxd.memory only its
# own group and groups of lower layers: ingest and recall share a layer and use neither the other.
MEMORY_LAYERS = {
    "text": 0,  # tokens, model sizes, redaction: imports no other group
    "store": 1,  # SQLite, the typed items, the project's paths
    "ingest": 2,  # transcripts into the store
    "recall": 2,  # ranked, semantic and Chinese-English recall
    "context": 3,  # the context engine
    "sync": 4,  # sharing through git
    "top": 5,  # ProjectMemory and finding a project (MEMORY_TOP)
}
MEMORY_TOP = {"core", "project"}


def memory_group(name):
    """The group (a MEMORY_LAYERS key, or an unknown folder's or top module's name) of a module
    of ctxd.memory; None for ctxd.memory itself and for modules outside it."""
    parts = name.split(".")
    if parts[:2] != ["ctxd", "memory"] or len(parts) == 2:
        return None
    if len(parts) > 3 or is_package(name):
        return parts[2]  # a folder
    return "top" if parts[2] in MEMORY_TOP else parts[2]


def memory_layout_problems():
    """Modules of ctxd/memory/ in a folder MEMORY_LAYERS has no layer for, or beside the folders
    and not in MEMORY_TOP."""
    found = set()
    for name in SOURCES:
        group = memory_group(name)
        if group is None or group in MEMORY_LAYERS:
            continue
        if len(name.split(".")) > 3 or is_package(name):
            found.add(f"ctxd/memory/{group}/: a folder with no layer in MEMORY_LAYERS")
        else:
            found.add(f"{SOURCES[name].relative_to(PKG.parent)}: a module beside the layers' folders, "
                      "not in MEMORY_TOP")
    return sorted(found)


def memory_layer_violations():
    """Imports (module level or in a function) by a ctxd.memory module of a memory group that is
    neither its own nor in a lower layer."""
    found = []
    for name in SOURCES:
        group = memory_group(name)
        if group not in MEMORY_LAYERS:
            continue
        for target, node, _alias in imports(name):
            other = memory_group(target) if target in SOURCES else None
            if other is None or other == group or other not in MEMORY_LAYERS:
                continue
            if MEMORY_LAYERS[other] >= MEMORY_LAYERS[group]:
                found.append(f"{where(name, node)}: {name} ({group}, layer {MEMORY_LAYERS[group]}) imports "
                             f"{target} ({other}, layer {MEMORY_LAYERS[other]})")
    return found


def test_every_memory_folder_has_a_layer():
    found = memory_layout_problems()
    assert not found, ("ctxd/memory/ holds its modules in layer folders: add the folder to MEMORY_LAYERS "
                       "in tests/test_architecture.py with its layer, or move the module into a "
                       "folder:\n  " + "\n  ".join(found))


def test_memory_imports_only_its_own_and_lower_layers():
    found = memory_layer_violations()
    assert not found, (f"a ctxd/memory/ module importing another folder of its own or a higher layer "
                       f"(layers, bottom 0 to top: {MEMORY_LAYERS}), lazy imports included: move the code "
                       "down, or have the caller pass it in:\n  " + "\n  ".join(found))


MAX_LINES = 600


def long_modules():
    return [f"{SOURCES[name].relative_to(PKG.parent)}: {LINES[name]} lines"
            for name in sorted(SOURCES) if LINES[name] > MAX_LINES]


def test_no_module_is_over_the_line_limit():
    found = long_modules()
    assert not found, (f"modules over {MAX_LINES} lines (split one by what its parts do):\n  "
                       + "\n  ".join(found))


# What a tool module may import of ctxd besides ctxd.agents itself: what its parser and hook handlers need.
AGENTS_MAY_IMPORT = {
    "ctxd.errors": "ImportFailed, a CtxdError",
    "ctxd.isotime": "record times",
    "ctxd.activation.fileio": "sha256 for dedup keys",
    "ctxd.memory.store.items": "the typed model a parser yields",
    "ctxd.memory.store.llm": "llm's logs.db reader (SQL stays in the store modules)",
    "ctxd.memory.store.errors": "StoreUnavailable: a hook handler (Codex notify) reads a store that may be busy",
}


def agent_imports():
    """Imports of ctxd by ctxd/agents/ modules outside their package and AGENTS_MAY_IMPORT
    (the packages a permitted module sits in are implied)."""
    implied = {a for m in AGENTS_MAY_IMPORT for a in _with_ancestors(m)[:-1]}
    found = []
    for name in SOURCES:
        if not _within(name, ("ctxd.agents",)):
            continue
        for target, node, _alias in imports(name):
            if _within(target, ("ctxd.agents",)) or target in AGENTS_MAY_IMPORT or target in implied:
                continue
            found.append(f"{where(name, node)}: {name} imports {target}")
    return found


def test_agents_import_only_what_their_interface_needs():
    found = agent_imports()
    assert not found, ("a tool module importing ctxd beyond what its interface needs (AGENTS_MAY_IMPORT: "
                       f"{', '.join(sorted(AGENTS_MAY_IMPORT))}):\n  " + "\n  ".join(found))


# The AI tools' names, as whole string literals: a module outside ctxd/agents/ that writes one
# holds a piece of that tool's knowledge (a table, an `if tool == ...`) that belongs in its module.
TOOL_NAMES = {"claude", "codex", "gemini", "codex-notify"}
TOOL_NAMES_ALLOWED = {  # module: why it names a tool
    "ctxd.memory.store.items": "reparse_legacy: rows an earlier Claude importer flattened (a store migration)",
}


def tool_name_literals():
    """String literals naming an AI tool in modules outside ctxd/agents/ and TOOL_NAMES_ALLOWED
    (docstrings and f-string pieces are no whole string literals)."""
    found = []
    for name in SOURCES:
        if _within(name, ("ctxd.agents",)) or name in TOOL_NAMES_ALLOWED:
            continue
        for node in ast.walk(TREES[name]):
            if isinstance(node, ast.Constant) and node.value in TOOL_NAMES:
                found.append((str(SOURCES[name]), node.lineno, f"{where(name, node)}: {node.value!r}"))
    return [f for _path, _line, f in sorted(found)]


def test_ai_tool_names_appear_only_in_their_modules():
    found = tool_name_literals()
    assert not found, ("an AI tool's name outside ctxd/agents/ (move what the code knows of the tool into "
                       "its module there, behind AgentTool; or ask the registry):\n  " + "\n  ".join(found))


FASTPATH_TABLE = "| module | may import | for |"


def fastpath_allowed():
    """{module's last name: the ctxd modules it may import outside ctxd.fastpath}, read from
    the table in ctxd/fastpath/__init__.py's docstring that starts with FASTPATH_TABLE."""
    doc = ast.get_docstring(TREES["ctxd.fastpath"]) or ""
    assert FASTPATH_TABLE in doc, f"ctxd/fastpath/__init__.py: no table starting {FASTPATH_TABLE!r}"
    allowed = {}
    for line in doc.split(FASTPATH_TABLE, 1)[1].strip().splitlines()[1:]:  # after the |---| row
        if not line.startswith("|"):
            break
        module, may = (cell.strip() for cell in line.strip("|").split("|")[:2])
        allowed[module] = {m.strip() for m in may.split(",") if m.strip()}
    return allowed


def fastpath_imports():
    """Imports of ctxd by ctxd/fastpath/ modules outside their package and their row of the
    package's table (the packages a permitted module sits in are implied; the package's own
    __init__ may import nothing)."""
    allowed = fastpath_allowed()
    found = []
    for name in SOURCES:
        if not _within(name, ("ctxd.fastpath",)):
            continue
        may = set() if name == "ctxd.fastpath" else allowed.get(name.rsplit(".", 1)[1])
        if may is None:
            found.append(f"{SOURCES[name].relative_to(PKG.parent)}: {name} has no row in the table")
            continue
        implied = {a for m in may for a in _with_ancestors(m)[:-1]}
        for target, node, _alias in imports(name):
            if _within(target, ("ctxd.fastpath",)) or target in may or target in implied:
                continue
            found.append(f"{where(name, node)}: {name} imports {target}")
    return found


def test_fastpath_imports_only_what_its_table_allows():
    found = fastpath_imports()
    assert not found, ("a ctxd/fastpath/ module importing ctxd beyond its row of the table in "
                       "ctxd/fastpath/__init__.py (add the row or the import there, with its reason):\n  "
                       + "\n  ".join(found))


# -- the checks themselves, on source they must reject ------------------------------------------

@pytest.fixture
def fake_module(monkeypatch):
    """Add a module with the given source to the parsed package, as if it were a file in ctxd/."""

    def add(name, source, package=False):
        rel = Path(*name.split(".")[1:])
        path = PKG / rel / "__init__.py" if package else PKG / rel.with_suffix(".py")
        monkeypatch.setitem(SOURCES, name, path)
        monkeypatch.setitem(TREES, name, ast.parse(source))
        monkeypatch.setitem(LINES, name, len(source.splitlines()))

    return add


def test_the_checks_catch_what_they_forbid(fake_module):
    fake_module("ctxd.commands.zz_fake", "from ctxd.commands import chat\n"
                                         "def f(db):\n"
                                         "    from ctxd.memory.context.engine import _merge\n"
                                         "    from ctxd.memory.context import engine\n"
                                         "    import sqlite3\n"
                                         "    sqlite3.connect('x').execute('SELECT 1')\n"
                                         "    return engine._secret(db)\n")
    assert any("zz_fake" in f and "ctxd.commands.chat" in f for f in command_imports())
    private = private_uses()
    assert any("from ctxd.memory.context.engine import _merge" in p for p in private)
    assert any("ctxd.memory.context.engine._secret" in p for p in private)
    sql = [s for s in sql_uses() if "zz_fake" in s]
    assert any(".execute(" in s for s in sql) and any("sqlite3.connect" in s for s in sql)


def test_the_sql_check_allows_only_the_store_package(fake_module):
    sql = "import sqlite3\nsqlite3.connect('x').execute('SELECT 1')\n"
    fake_module("ctxd.memory.store.zz_fake", sql)
    fake_module("ctxd.memory.store_zz_fake", sql)  # a store_ prefix outside the folder is no store module
    fake_module("ctxd.memory.context.zz_fake", sql)
    assert sorted({s.split(":")[0] for s in sql_uses() if "zz_fake" in s}) == [
        "ctxd/memory/context/zz_fake.py", "ctxd/memory/store_zz_fake.py"]

def test_the_layer_checks_catch_lazy_imports(fake_module):
    fake_module("ctxd.memory.zz_fake", "def f():\n    from ctxd.integrations import agent_hooks\n"
                                       "def g():\n    import ctxd.commands.chat\n"
                                       "def h():\n    from ctxd.handoff.teach import build_prompt\n")
    fake_module("ctxd.memory.zz_fake2", "from ctxd.handoff import archive\n")
    fake_module("ctxd.agents.zz_fake", "from ctxd.memory.store import items\n"
                                       "def f():\n    from ctxd.memory.core import ProjectMemory\n"
                                       "def g():\n    from ctxd.agents.base import Malformed\n")
    memory = [f.split(": ", 1)[1] for f in memory_upward_imports() if "zz_fake" in f]
    assert sorted(memory) == ["ctxd.memory.zz_fake imports ctxd.commands.chat",
                              "ctxd.memory.zz_fake imports ctxd.handoff.teach",
                              "ctxd.memory.zz_fake imports ctxd.integrations.agent_hooks",
                              "ctxd.memory.zz_fake2 imports ctxd.handoff.archive"]
    assert [f.split(": ", 1)[1] for f in agent_imports() if "zz_fake" in f] == [
        "ctxd.agents.zz_fake imports ctxd.memory.core"]


def test_the_tool_name_check_catches_a_branch_on_a_tool(fake_module):
    fake_module("ctxd.integrations.zz_fake", '"""A docstring may say claude."""\n'
                                             'def f(tool):\n    return tool == "gemini" or f"{tool}-claude"\n')
    fake_module("ctxd.agents.zz_fake", 'NAME = "codex"\n')
    assert [f for f in tool_name_literals() if "zz_fake" in f] == ["ctxd/integrations/zz_fake.py:3: 'gemini'"]


def test_the_fastpath_check_catches_an_import_off_its_table(fake_module):
    fake_module("ctxd.fastpath.minijson", "def f():\n    from ctxd.memory.store import db\n"
                                          "def g():\n    from ctxd.fastpath import posix_os\n")
    fake_module("ctxd.fastpath.zz_fake", "")
    found = [f.split(": ", 1)[1] for f in fastpath_imports()]
    assert found == ["ctxd.fastpath.minijson imports ctxd.memory.store.db",
                     "ctxd.fastpath.zz_fake has no row in the table"]


def test_a_lazy_cycle_is_reported_with_its_path(fake_module):
    fake_module("ctxd.zz_a", "def f():\n    from ctxd import zz_b\n")
    fake_module("ctxd.zz_b", "def g():\n    import ctxd.zz_a\n")
    cycles = [path for path, comp in find_cycles(import_graph()) if "ctxd.zz_a" in comp]
    assert cycles == [["ctxd.zz_a", "ctxd.zz_b", "ctxd.zz_a"]]


def test_relative_imports_resolve(fake_module):
    fake_module("ctxd.zz_pkg", "", package=True)
    fake_module("ctxd.zz_pkg.zz_one", "from .zz_two import thing\nfrom .. import zz_top\n")
    fake_module("ctxd.zz_pkg.zz_two", "thing = 1\n")
    fake_module("ctxd.zz_top", "")
    graph = import_graph()
    assert set(graph["ctxd.zz_pkg.zz_one"]) == {"ctxd.zz_pkg.zz_two", "ctxd.zz_top"}


def test_a_sibling_import_is_no_edge_to_the_own_package(fake_module):
    fake_module("ctxd.zz_pkg", "from ctxd.zz_pkg import zz_one\n", package=True)
    fake_module("ctxd.zz_pkg.zz_one", "from ctxd.zz_pkg.zz_two import thing\n")
    fake_module("ctxd.zz_pkg.zz_two", "thing = 1\n")
    graph = import_graph()
    assert set(graph["ctxd.zz_pkg.zz_one"]) == {"ctxd.zz_pkg.zz_two"}
    assert not [c for _p, c in find_cycles(graph) if "ctxd.zz_pkg" in c]


def test_a_package_init_importing_a_submodule_is_an_edge(fake_module):
    fake_module("ctxd.zz_pkg", "from . import zz_mod\n", package=True)
    fake_module("ctxd.zz_pkg.zz_mod", "from ctxd import zz_pkg\n")
    graph = import_graph()
    assert "ctxd.zz_pkg.zz_mod" in graph["ctxd.zz_pkg"]
    assert any({"ctxd.zz_pkg", "ctxd.zz_pkg.zz_mod"} <= comp for _p, comp in find_cycles(graph))


def test_the_memory_layer_check_catches_an_upward_import(fake_module):
    fake_module("ctxd.memory.store.zz_fake", "from ctxd.memory.text import tokens\n"
                                             "from ctxd.memory.store import db\n"
                                             "def f():\n    from ctxd.memory.context import engine\n"
                                             "def g():\n    import ctxd.memory.core\n")
    fake_module("ctxd.memory.recall.zz_fake", "def f():\n    from ctxd.memory.ingest import importing\n")
    fake_module("ctxd.memory.zz_top", "from ctxd.memory.sync import sharing\n")
    found = sorted(f.split(": ", 1)[1] for f in memory_layer_violations() if "zz_" in f)
    assert found == [
        "ctxd.memory.recall.zz_fake (recall, layer 2) imports ctxd.memory.ingest.importing (ingest, layer 2)",
        "ctxd.memory.store.zz_fake (store, layer 1) imports ctxd.memory.context.engine (context, layer 3)",
        "ctxd.memory.store.zz_fake (store, layer 1) imports ctxd.memory.core (top, layer 5)"]
    assert [p for p in memory_layout_problems() if "zz_" in p] == [
        "ctxd/memory/zz_top.py: a module beside the layers' folders, not in MEMORY_TOP"]


def test_the_memory_layout_check_catches_a_folder_with_no_layer(fake_module):
    fake_module("ctxd.memory.zz_new", '"""A new layer."""\n', package=True)
    fake_module("ctxd.memory.zz_new.mod", "")
    fake_module("ctxd.memory.zz_deep.inner.mod", "")
    fake_module("ctxd.memory.context.zz_fine", "")
    assert [p for p in memory_layout_problems() if "zz_" in p] == [
        "ctxd/memory/zz_deep/: a folder with no layer in MEMORY_LAYERS",
        "ctxd/memory/zz_new/: a folder with no layer in MEMORY_LAYERS"]


def test_the_line_limit_check_catches_a_long_module(fake_module):
    fake_module("ctxd.zz_long", "x = 1\n" * (MAX_LINES + 1))
    fake_module("ctxd.zz_short", "x = 1\n" * MAX_LINES)
    assert [f for f in long_modules() if "zz_" in f] == [f"ctxd/zz_long.py: {MAX_LINES + 1} lines"]



BUILTIN_EXCEPTIONS = {name for name, v in vars(builtins).items()
                      if isinstance(v, type) and issubclass(v, BaseException)}


def exception_classes():
    """{class name: (module, node, base names)} for every class ctxd defines (bases by their last name)."""
    out = {}
    for name in SOURCES:
        for node in ast.walk(TREES[name]):
            if isinstance(node, ast.ClassDef):
                bases = [b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in node.bases]
                out.setdefault(node.name, (name, node, bases))
    return out


def non_domain_errors(classes):
    """Public exception classes whose ancestry reaches a builtin exception but not CtxdError."""

    def roots(cls, seen=()):
        if cls == "CtxdError":
            return {"CtxdError"}
        if cls in BUILTIN_EXCEPTIONS:
            return {cls}
        if cls not in classes or cls in seen:
            return set()
        return set().union(*(roots(b, seen + (cls,)) for b in classes[cls][2]))

    found = []
    for cls, (name, node, bases) in sorted(classes.items()):
        r = roots(cls)
        if cls != "CtxdError" and r and "CtxdError" not in r and not cls.startswith("_"):
            found.append(f"{where(name, node)}: {cls}({', '.join(bases)})")
    return found


def test_every_error_ctxd_raises_for_users_is_a_ctxd_error():
    """One base, so every protocol (CLI, export, hooks, MCP) maps a domain error the same way
    (ctxd.boundary); private control-flow exceptions (``_Rescan``) are not for users."""
    found = non_domain_errors(exception_classes())
    assert not found, "exception classes that do not derive from ctxd.errors.CtxdError:\n  " + "\n  ".join(found)


def test_the_error_check_rejects_a_plain_exception(fake_module):
    fake_module("ctxd.zz_err", "from ctxd.errors import CtxdError\n"
                               "class Fine(CtxdError): pass\n"
                               "class AlsoFine(Fine): pass\n"
                               "class Bad(ValueError): pass\n"
                               "class _Private(Exception): pass\n")
    found = non_domain_errors(exception_classes())
    assert [f for f in found if "zz_err" in f] == ["ctxd/zz_err.py:4: Bad(ValueError)"]
