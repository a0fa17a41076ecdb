"""The tests' own layout: no test module imports another. What tests share lives in a kit (a
module not named test_*.py: tests/ctxdtest.py, tests/shellkit.py, tests/scriptkit.py,
tests/e2e/e2ekit.py, ...) or, for fixtures, in a conftest.py; a test module then stands on its
own, and moving or renaming one breaks no other."""

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def python_files():
    return sorted(p for p in TESTS.rglob("*.py") if "data" not in p.relative_to(TESTS).parts)


def imported_test_modules(path, test_modules):
    """(line, module) for each import in *path*, lazy ones too, of a module in *test_modules*
    (names of test_*.py files), however it is spelled: import test_x, from test_x import y,
    from e2e.test_x import y, from . import test_x."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            names = [base] + [f"{base}.{a.name}".lstrip(".") for a in node.names]
        else:
            continue
        hit = next((n for n in names if set(n.split(".")) & test_modules), None)
        if hit:
            found.append((node.lineno, hit))
    return found


def test_no_test_module_imports_another():
    test_modules = {p.stem for p in python_files() if p.name.startswith("test_")}
    found = [f"{p.relative_to(TESTS.parent)}:{line}: imports {module}" for p in python_files()
             for line, module in imported_test_modules(p, test_modules)]
    assert not found, ("a test module imported by another: move what they share into a kit (or a "
                       "fixture into conftest.py)\n  " + "\n  ".join(found))


def test_the_check_sees_every_spelling_of_an_import(tmp_path):
    f = tmp_path / "test_zz.py"
    f.write_text("import os\nimport test_a\nfrom test_b import x\nfrom e2e.test_c import y\n"
                 "def f():\n    from . import test_d\n    import shellkit\n    from scriptkit import test_e\n")
    assert imported_test_modules(f, {"test_a", "test_b", "test_c", "test_d"}) == [
        (2, "test_a"), (3, "test_b"), (4, "e2e.test_c"), (6, "test_d")]
