"""Two properties of app/ that review alone kept losing (issue 14, point 2; docs/architecture.md
rule 15):

* **No import cycles.** ``app.catalog.seed`` and ``app.catalog.service`` imported each other;
  a cycle makes import order matter and hides which module owns what. Every import counts,
  including those inside functions and under ``TYPE_CHECKING``: a cycle there is the same
  coupling, only deferred.
* **No process-wide cache in a module global.** The catalog snapshot, the estimate answers and
  the checked API keys used to be module dicts that every test reset by hand and two apps in
  one process shared; they now live on ``app.caches.Caches``, held by ``create_app`` or a CLI
  command (docs/architecture.md, "Where caches live"). This test reads every module of app/
  and fails on the three shapes such a cache takes: a module-level container that functions
  write to, a module-level cache object, and ``functools.cache``/``lru_cache`` anywhere but
  on the few functions listed below, whose answer is fixed for the life of the process.
"""

from __future__ import annotations

import ast
import gc
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import grimp
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from starlette.routing import Mount

from app.caches import Caches
from app.config import APP_DIR, load_settings
from app.main import create_app

APP = APP_DIR
ROOT = APP_DIR.parent

CONTAINER_CALLS = frozenset({
    "dict", "list", "set", "OrderedDict", "defaultdict", "deque", "Counter",
    "WeakValueDictionary", "WeakKeyDictionary", "WeakSet",
})
"""Calls that build a mutable container (``_cache: dict[...] = {}`` is the literal form)."""
MUTATORS = frozenset({
    "append", "appendleft", "add", "update", "setdefault", "pop", "popitem", "popleft",
    "clear", "extend", "insert", "remove", "discard", "move_to_end",
})
"""Methods that change a container in place."""
CACHE_DECORATORS = frozenset({"cache", "lru_cache", "cached_property"})

CONSTANT_FOR_THE_PROCESS: dict[tuple[str, str], str] = {
    ("app/accounts/passwords.py", "_hasher"): "argon2's hasher with today's fixed parameters",
    ("app/accounts/passwords.py", "dummy_hash"):
        "a hash of a fixed text, made once (timing equality for unknown e-mails)",
    ("app/db/migrate.py", "head_revision"): "the migration files shipped with this release",
    ("app/html/i18n.py", "translations"): "the compiled .mo files shipped with this release",
    ("app/html/i18n.py", "_locale"): "Babel's locale data for a language code",
    ("app/html/i18n.py", "_separators"): "Babel's grouping and decimal signs for a language code",
    ("app/html/i18n.py", "format_eur"):
        "an amount written the way Babel's shipped locale data writes it (the amount is the key)",
    ("app/web/speed_view.py", "method_page"):
        "the published speed measurements shipped as package data and the engine's constants",
    ("app/catalog/search.py", "_named_derivative"):
        "whether names contain a fixed derivative word (the names are the key, not the catalog)",
    ("app/html/templating.py", "environment"):
        "the Jinja environment over the shipped templates (auto_reload off)",
    ("app/html/templating.py", "_translated"):
        "a message in the shipped catalog of a language (language and message are the key)",
    ("app/html/templating.py", "_translated_alone"):
        "the same, %-formatted with no values",
    ("app/engine/precision.py", "resolve"):
        "the frameworks' dtype presets, engine constants (the five choices are the key)",
    ("app/engine/capabilities.py", "capabilities"):
        "a card's formats from its compute capability and engine constants (the capability "
        "is the key)",
    ("app/html/templating.py", "_named_strings_only"):
        "whether a message's conversions are all %(name)s (the message text is the key)",
}
"""Memoised functions allowed in app/: each answer depends only on files or constants that
ship with the release, never on the database, the settings or the environment."""

KEPT_BY_ONE_ANSWER: dict[tuple[str, str], str] = {
    ("app/web/result_view.py", "CardRow"): "a card's row of one result, built per answer",
    ("app/web/result_view.py", "SystemRow"): "a system's row of one result, built per answer",
}
"""Classes whose ``cached_property`` values are allowed: their instances are made for one
answer and dropped with it, so what they keep never outlives the request."""

READS_STATE = frozenset({
    "Session", "session", "get_bind", "engine", "Settings", "settings", "load_settings",
    "load_settings_or_exit", "environ", "getenv",
})
"""Names whose use inside a memoised function means it keeps state that can change."""


def _parse_all() -> list[tuple[str, ast.Module]]:
    return [(path.relative_to(ROOT).as_posix(), ast.parse(path.read_text(encoding="utf-8")))
            for path in sorted(APP.rglob("*.py"))]


def _modules() -> Iterator[tuple[str, ast.Module]]:
    """Every module of app/, parsed.

    CPython 3.11's AST builder can fail with "SystemError: AST constructor recursion depth
    mismatch" once earlier code in the process has left its recursion counters off (CPython
    gh-106905, fixed in 3.12; seen here once in a full run, after the nesting-bomb tests). The
    files are then parsed again in a fresh interpreter, whose counters are clean."""
    try:
        parsed = _parse_all()
    except SystemError:
        with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
            parsed = pool.submit(_parse_all).result()
    yield from parsed


def _called(node: ast.expr) -> str | None:
    target = node.func if isinstance(node, ast.Call) else node
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute):
        return target.attr
    return None


def _module_level_bindings(module: ast.Module) -> Iterator[tuple[str, ast.expr]]:
    for node in module.body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    yield target.id, node.value
        elif (isinstance(node, ast.AnnAssign) and node.value is not None
              and isinstance(node.target, ast.Name)):
            yield node.target.id, node.value


def _is_container(value: ast.expr) -> bool:
    literal = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)
    return isinstance(value, literal) or (
        isinstance(value, ast.Call) and _called(value) in CONTAINER_CALLS)


def _writes(function: ast.AST, names: set[str]) -> Iterator[str]:
    """How ``function`` changes one of the module's containers ``names``, if it does."""
    for node in ast.walk(function):
        if isinstance(node, ast.Global):
            yield f"rebinds the module global(s) {', '.join(node.names)}"
        targets: list[ast.expr] = []
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for target in targets:
            if (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
                    and target.value.id in names):
                yield f"writes {target.value.id}[...]"
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id in names
                and node.func.attr in MUTATORS):
            yield f"calls {node.func.value.id}.{node.func.attr}()"


def module_state_problems(path: str, module: ast.Module) -> list[str]:
    """Every place in one module that keeps process-wide state the test forbids."""
    problems: list[str] = []
    containers = {name for name, value in _module_level_bindings(module) if _is_container(value)}
    for name, value in _module_level_bindings(module):
        made = _called(value) if isinstance(value, ast.Call) else None
        if made is not None and (made.endswith("Cache") or made == "Caches"):
            problems.append(f"{path}: {name} = {made}(...) is a cache in a module global")
    per_answer = {id(method) for node in ast.walk(module)
                  if isinstance(node, ast.ClassDef) and (path, node.name) in KEPT_BY_ONE_ANSWER
                  for method in node.body}
    for node in ast.walk(module):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for how in _writes(node, containers):
            problems.append(f"{path}: {node.name}() {how}")
        if any(_called(d) in CACHE_DECORATORS for d in node.decorator_list) and not (
                id(node) in per_answer
                and all(_called(d) == "cached_property" for d in node.decorator_list)):
            reason = CONSTANT_FOR_THE_PROCESS.get((path, node.name))
            used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
                n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
            if reason is None:
                problems.append(f"{path}: {node.name}() is memoised for the whole process; "
                                "keep the cache on app.caches.Caches, or list the function "
                                "in CONSTANT_FOR_THE_PROCESS with why its answer never changes")
            elif used & READS_STATE:
                problems.append(f"{path}: {node.name}() is memoised but reads "
                                f"{sorted(used & READS_STATE)}")
    return problems


def test_app_keeps_no_cache_in_a_module_global() -> None:
    problems = [p for path, module in _modules() for p in module_state_problems(path, module)]
    assert problems == []


def test_the_check_sees_each_shape_of_module_cache() -> None:
    """The three caches this issue moved, as they were written, are each caught."""
    before = ast.parse(
        "import functools\n"
        "from collections import OrderedDict\n"
        "_cache: dict[str, int] = {}\n"
        "_results = OrderedDict()\n"
        "_principals = {}\n"
        "_shared = CatalogCache()\n"
        "def get(key):\n"
        "    _cache[key] = 1\n"
        "def remember(key):\n"
        "    _results.move_to_end(key)\n"
        "def forget():\n"
        "    _principals.clear()\n"
        "@functools.lru_cache(maxsize=1)\n"
        "def get_settings():\n"
        "    return load_settings()\n"
    )
    problems = module_state_problems("app/example.py", before)
    assert len(problems) == 5, problems


def _import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    work: list[tuple[str, Iterator[str]]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        work.append((module, iter(sorted(graph.find_modules_directly_imported_by(module)))))

    for root in sorted(graph.modules):
        if root in index:
            continue
        visit(root)
        while work:
            module, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    visit(child)
                elif child in on_stack:
                    low[module] = min(low[module], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[module])
            if low[module] == index[module]:
                group: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == module:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def test_app_has_no_import_cycles() -> None:
    graph = grimp.build_graph("app", exclude_type_checking_imports=False)
    cycles = _import_cycles(graph)
    chains = [graph.find_shortest_chain(importer=group[0], imported=group[1]) for group in cycles]
    assert cycles == [], f"import cycles: {cycles}; e.g. {chains}"


def test_app_has_no_import_cycles_between_packages() -> None:
    """Each package of app/ taken as one node: no two import each other, however indirectly.
    db, catalog, accounts, quotes and estimates formed one through app/db/tables.py (the
    domains' vocabularies, now app/vocabularies.py) and the catalog's use of the config reader
    (now app/catalog/inline_config.py); the layers contract in pyproject.toml keeps the domains'
    order, this test every package's."""
    graph = grimp.build_graph("app", exclude_type_checking_imports=False)
    assert _package_cycles(graph) == []


def _package_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The import cycles among app's packages, each package squashed into one node."""
    for package in sorted(graph.find_children("app")):
        if graph.find_children(package):
            graph.squash_module(package)
    return _import_cycles(graph)


def test_the_package_check_finds_a_cycle_between_packages() -> None:
    """db imports a vocabulary of catalog, catalog a module of db: no module cycle, but the two
    packages import each other (the circle app/db/tables.py once closed)."""
    graph = grimp.ImportGraph()
    for module in ("app", "app.db", "app.db.tables", "app.catalog", "app.catalog.roles",
                   "app.catalog.service"):
        graph.add_module(module)
    graph.add_import(importer="app.db.tables", imported="app.catalog.roles")
    graph.add_import(importer="app.catalog.service", imported="app.db.tables")
    assert _import_cycles(graph) == []
    assert _package_cycles(graph) == [["app.catalog", "app.db"]]


def test_the_cycle_check_finds_a_cycle() -> None:
    graph = grimp.ImportGraph()
    for module in ("app", "app.seed", "app.service", "app.schemas"):
        graph.add_module(module)
    graph.add_import(importer="app.seed", imported="app.service")
    graph.add_import(importer="app.service", imported="app.seed")
    graph.add_import(importer="app.service", imported="app.schemas")
    assert _import_cycles(graph) == [["app.seed", "app.service"]]


def test_the_allowed_memoised_functions_exist() -> None:
    """A stale entry would let a new function of the same name in through the back door."""
    found = {(path, node.name) for path, module in _modules() for node in ast.walk(module)
             if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    assert set(CONSTANT_FOR_THE_PROCESS) <= found


def test_each_app_holds_its_own_caches_and_its_partner_api_the_same(tmp_path: Path) -> None:
    """Two apps in one process (two tests, or a test and a tool) share nothing; the partner
    sub-application serves from its app's caches, so a staff edit drops what both show."""
    settings = load_settings(database_url=f"sqlite:///{tmp_path / 'shop.db'}")
    first, second = create_app(settings), create_app(settings)
    given = Caches()
    third = create_app(settings, caches=given)

    assert isinstance(first.state.caches, Caches)
    assert first.state.caches is not second.state.caches
    assert third.state.caches is given
    for app in (first, second, third):
        (api,) = [r.app for r in app.routes if isinstance(r, Mount) and r.path == "/api/v1"]
        assert isinstance(api, FastAPI) and api.state.caches is app.state.caches


@pytest.mark.usefixtures("start_up_heap_frozen")
def test_a_started_app_keeps_its_start_up_objects_out_of_the_collector_s_walks(
        tmp_path: Path) -> None:
    """Started (its lifespan running), the app has frozen what start-up built, so a full
    collection no longer walks the modules, classes and routes (``gc.freeze``); stopped, it
    hands them back."""
    app = create_app(load_settings(database_url=f"sqlite:///{tmp_path / 'sizer.db'}"))
    with TestClient(app):
        assert gc.get_freeze_count() > 10_000
        garbage: list[list[object]] = [[]]
        garbage[0].append(garbage)  # a cycle made after start-up is still collected
        del garbage
        assert gc.collect() > 0
    assert gc.get_freeze_count() == 0
