"""The shape of the code in app/, checked with ``ast`` so that it stays true:

* **No function over 60 lines.** A longer function mixes concepts (the step model was 180
  lines of weights, gradients, sharding and framework terms in one); split it by concept.
* **No private name imported across modules.** ``from app.x import _name`` reaches into
  another module's internals; what modules share is public (``app/engine/architectures/kit.py``
  is the builders' shared kit, by public names).
* **No issue numbers in code or docstrings.** History belongs in CHANGELOG.md; the code says
  what it does and where its constants come from, not which issue changed it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "app"

MAX_FUNCTION_LINES = 60
"""The longest a function in app/ may be, its signature, docstring and body together."""

ISSUE_REFERENCE = re.compile(r"\bissues?\s+#?\d{1,3}\b", re.IGNORECASE)
"""``issue 15``, ``Issue #26``, ``issues 15``: a reference to this project's tracker, not a
description. An upstream tracker's number (``PyTorch issue 91167``) is a source and stays."""


def _sources() -> list[tuple[str, str]]:
    return sorted((path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8"))
                  for path in APP.rglob("*.py"))


def long_functions(source: str, limit: int = MAX_FUNCTION_LINES) -> list[tuple[str, int]]:
    """Each function (and method) longer than ``limit`` lines, with its length."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            length = (node.end_lineno or node.lineno) - first + 1
            if length > limit:
                found.append((node.name, length))
    return found


def private_imports(source: str) -> list[str]:
    """Each ``_name`` imported from another module (``from m import _name``); dunder names
    (``__version__``) and private aliases of public names (``import x as _x``) are no reach
    into another module's internals."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            found += [f"{node.module}.{alias.name}" for alias in node.names
                      if alias.name.startswith("_") and not alias.name.startswith("__")]
    return found


def issue_references(source: str) -> list[str]:
    """Each line that names an issue by its number."""
    return [line.strip() for line in source.splitlines() if ISSUE_REFERENCE.search(line)]


def test_no_function_in_app_is_over_60_lines() -> None:
    long = {path: found for path, source in _sources() if (found := long_functions(source))}
    assert long == {}


def test_no_private_name_is_imported_across_modules_in_app() -> None:
    reaching = {path: found for path, source in _sources() if (found := private_imports(source))}
    assert reaching == {}


def test_no_issue_number_in_app() -> None:
    named = {path: found for path, source in _sources() if (found := issue_references(source))}
    assert named == {}


def test_the_checks_find_what_they_refuse() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES - 1))
    assert long_functions(f"def f():\n{body}") == []
    assert long_functions(f"@decorated\ndef f():\n{body}") == [("f", MAX_FUNCTION_LINES + 1)]
    method = "".join(f"    {line}" for line in body.splitlines(keepends=True))
    assert long_functions(f"class C:\n    def m(self):\n{method}        return 1\n") == [
        ("m", MAX_FUNCTION_LINES + 1)]
    assert private_imports("from app.engine.shapes import _Config, ModelShape\n"
                           "from app.engine import activations as _act\n"
                           "from app import __version__\n") == ["app.engine.shapes._Config"]
    assert issue_references('"""The bound (issue 18, point 11)."""\n# Issue #26\nx = 1\n') == [
        '"""The bound (issue 18, point 11)."""', "# Issue #26"]
    assert issue_references("# the issue with 8-bit optimizers\n") == []
    assert issue_references("# (PyTorch issue 91167)\n") == []
