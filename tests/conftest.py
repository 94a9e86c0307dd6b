"""Database fixtures shared by the catalog, migration and web tests.

Every database test runs twice: on SQLite (a temporary file) and on PostgreSQL
(the server named by SIZER_TEST_POSTGRES_URL, in a schema of its own so that
parallel runs never meet). Without that variable, or when the server does not
answer, the PostgreSQL half skips and says why; with CI=true it FAILS instead,
so a CI machine can never go green without having tested PostgreSQL.

Redis (the shared rate limits and sign-in throttle) works the same way: the ``redis_target``
fixture uses SIZER_TEST_REDIS_URL (default redis://127.0.0.1:6379/15) with a key prefix of
its own per test, deletes its keys afterwards, and skips when Redis does not answer (fails
with CI=true).

The schema comes from the real migrations, once per process and backend (kept across
pytest-xdist's backend switches: ``_MigratedDatabases``). The seed catalog is written by
``seed_database`` the first time and from its kept rows after that (``seed_catalog``). Tests may
commit (the seed and cache tests must: they are about transactions and other
sessions), so instead of a rolled-back outer transaction each test ends by
emptying the catalog tables, which on four small tables is as fast and cannot
be fooled by code that commits.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, cast

import pytest
import redis
from sqlalchemy import Engine, Table, create_engine, insert, select, text, update
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

import app.main
from app.caches import Caches
from app.catalog.seed import seed_database
from app.db import migrate
from app.db.base import utcnow
from app.db.session import SessionFactory, make_engine, make_session_factory
from app.db.tables import CatalogRevision, GpuSku, ModelCard, System

POSTGRES_ENV = "SIZER_TEST_POSTGRES_URL"
REDIS_ENV = "SIZER_TEST_REDIS_URL"
DEFAULT_TEST_REDIS_URL = "redis://127.0.0.1:6379/15"
BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
RAM_DIR = Path("/dev/shm")
"""Linux's RAM file system, where the tests' SQLite files go when it is there (``sqlite_dir``)."""


def _postgres_base_url() -> str:
    """The server URL, or skip (fail under CI=true) with the reason."""
    url = os.environ.get(POSTGRES_ENV, "").strip()
    reason = None
    if not url:
        reason = f"{POSTGRES_ENV} is not set"
    else:
        engine = create_engine(url, connect_args={"connect_timeout": 3})
        try:
            with engine.connect() as connection:
                connection.execute(text("SELECT 1"))
        except Exception as exc:  # any failure means "not usable here"
            masked = make_url(url).render_as_string(hide_password=True)
            first_line = str(exc).strip().splitlines()[0]
            reason = f"PostgreSQL at {masked} is unreachable: {first_line}"
        finally:
            engine.dispose()
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason} (CI=true: the PostgreSQL tests must run)", pytrace=False)
        pytest.skip(f"{reason}; PostgreSQL tests skipped")
    return url


class _PostgresSchema:
    """A private schema on the test server; the URL sets search_path to it."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.name = f"sizer_test_{uuid.uuid4().hex[:12]}"
        engine = create_engine(base_url)
        with engine.begin() as connection:
            connection.execute(text(f'CREATE SCHEMA "{self.name}"'))
        engine.dispose()
        self.url = (
            make_url(base_url)
            .update_query_dict({"options": f"-csearch_path={self.name}"})
            .render_as_string(hide_password=False)
        )

    def drop(self) -> None:
        engine = create_engine(self.base_url)
        with engine.begin() as connection:
            connection.execute(text(f'DROP SCHEMA IF EXISTS "{self.name}" CASCADE'))
        engine.dispose()


@dataclass(frozen=True)
class RedisTarget:
    """The test Redis, a key prefix nobody else uses, and a client to look inside."""

    url: str
    prefix: str
    client: redis.Redis

    def settings(self) -> dict[str, str]:
        """``load_settings(**target.settings())``: an app counting in this Redis and prefix."""
        return {"redis_url": self.url, "redis_key_prefix": self.prefix}

    def keys(self) -> list[str]:
        return sorted(k.decode() for k in self.client.scan_iter(match=f"{self.prefix}*"))


LONG_FILE_MARKERS = ("long", "e2e")
"""A file with a case marked so (or a module ``pytestmark``) goes first under pytest-xdist."""


def _long_files_first(items: list[pytest.Item]) -> None:
    """Order the files for ``--dist loadfile --no-loadscope-reorder`` (make test): those marked
    ``long`` or ``e2e`` first (an image build, a wheel in a fresh environment, servers,
    browsers: tens of seconds each, in a handful of cases), then the rest by how many cases they
    hold, most first, as xdist's own reordering would. xdist's reordering alone put the long
    files last, as they hold few cases, and one core worked through them while the other
    waited. A file's cases keep their order."""
    counts = Counter(item.path for item in items)
    first_seen: dict[Path, int] = {}
    long_files: set[Path] = set()
    for index, item in enumerate(items):
        first_seen.setdefault(item.path, index)
        if any(item.get_closest_marker(name) is not None for name in LONG_FILE_MARKERS):
            long_files.add(item.path)
    items.sort(key=lambda item: (item.path not in long_files, -counts[item.path],
                                 first_seen[item.path]))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist, refuse cases that share a node id unless they are marked ``serial``:
    xdist schedules by node id, so it would run one of them and drop the rest unnoticed
    (schemathesis' operations did: 11 of 12 were lost). Then the long files go first
    (``_long_files_first``)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    counts = Counter(item.nodeid for item in items)
    shared = sorted({item.nodeid for item in items
                     if counts[item.nodeid] > 1 and item.get_closest_marker("serial") is None})
    if shared:
        raise pytest.UsageError(
            "these cases share a node id, so pytest-xdist would run only one of each; mark "
            "them serial (make test runs those in one process): " + ", ".join(shared))
    _long_files_first(items)


@pytest.fixture
def redis_target() -> Iterator[RedisTarget]:
    """Redis at SIZER_TEST_REDIS_URL, or skip (fail under CI=true) with the reason."""
    url = os.environ.get(REDIS_ENV, "").strip() or DEFAULT_TEST_REDIS_URL
    client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=5)
    try:
        client.ping()
    except redis.RedisError as exc:
        client.close()
        masked = re.sub(r"//[^@/]*@", "//***@", url)
        reason = f"Redis at {masked} is unreachable ({type(exc).__name__}: {exc})"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason} (CI=true: the Redis tests must run)", pytrace=False)
        pytest.skip(f"{reason}; Redis tests skipped (set {REDIS_ENV})")
    target = RedisTarget(url, f"gpusizer-test:{uuid.uuid4().hex[:12]}:", client)
    try:
        yield target
    finally:
        leftover = target.keys()
        if leftover:
            client.delete(*leftover)
        client.close()


FREEZE_START_UP_HEAP = app.main.freeze_start_up_heap
"""The app's own start-up ``gc.collect()`` + ``gc.freeze()`` (``start_up_heap_frozen``)."""


@pytest.fixture(scope="session", autouse=True)
def _apps_start_without_a_full_collection() -> Iterator[None]:
    """Apps the tests start skip ``app.main.freeze_start_up_heap``: its full ``gc.collect()``
    walks the whole test process (260,000+ objects once the suite's modules are imported: 0.13 s
    of CPU per test in tests/web/test_calculator.py and tests/staff/test_quotes.py, 1.1 s of wall
    time under load), and the suite starts an app for nearly every web, API and staff test, where
    a server process starts once. ``start_up_heap_frozen`` gives a test
    the real one (tests/test_process_state.py checks what it does)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(app.main, "freeze_start_up_heap", lambda: None)
        yield


@pytest.fixture
def start_up_heap_frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    """Apps started in this test collect and freeze their start-up heap as a server does."""
    monkeypatch.setattr(app.main, "freeze_start_up_heap", FREEZE_START_UP_HEAP)


@pytest.fixture(autouse=True)
def _isolated_process_state(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No SIZER_* from the developer's shell. (Nothing cached needs a reset: settings are read
    where they are needed, and each app and each test holds its own ``app.caches.Caches``.)"""
    for name in list(os.environ):
        if name.startswith("SIZER_") and name not in (POSTGRES_ENV, REDIS_ENV):
            monkeypatch.delenv(name)
    # No test reaches the internet: a model id with a "/" is looked up on the Hub
    # (app/catalog/hub.py), which is this closed port unless a test starts its fake Hub.
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    yield


@pytest.fixture
def caches() -> Caches:
    """Empty caches of their own for a test that calls the services directly."""
    return Caches()


def caches_of(client: Any) -> Caches:
    """The caches of the app a ``TestClient`` serves (``create_app`` put them on its state), for
    a test that writes in the app's process, as a staff route would."""
    found: Caches = client.app.state.caches
    return found


@pytest.fixture(scope="session", params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Which database the test runs on ("sqlite" or "postgresql")."""
    name: str = request.param
    if name == "postgresql":
        _postgres_base_url()
    return name


@pytest.fixture(scope="session")
def sqlite_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Where this process's SQLite test databases live: a folder of its own on ``RAM_DIR`` when
    that is a writable folder, else under pytest's temporary folder. Still SQLite files opened
    by the same code; on RAM each commit's fsync costs nothing, where on this machine's disk it
    was most of a small commit's time (a migration 1.15 s on disk, 0.18 s on RAM; writing the
    seed catalog and emptying it 66 ms, 14.5 ms). The folder is removed when the run ends."""
    if RAM_DIR.is_dir() and os.access(RAM_DIR, os.W_OK | os.X_OK):
        folder = Path(tempfile.mkdtemp(prefix="gpu-sizer-tests-", dir=RAM_DIR))
        try:
            yield folder
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return
    yield tmp_path_factory.mktemp("sqlite")


@pytest.fixture
def empty_database_url(backend: str, sqlite_dir: Path) -> Iterator[str]:
    """A database nobody has migrated yet (for migration and readiness tests)."""
    if backend == "sqlite":
        path = sqlite_dir / f"empty-{uuid.uuid4().hex[:12]}.db"
        try:
            yield f"sqlite:///{path}"
        finally:
            for leftover in (path, path.with_name(path.name + "-journal")):
                leftover.unlink(missing_ok=True)
        return
    schema = _PostgresSchema(_postgres_base_url())
    try:
        yield schema.url
    finally:
        schema.drop()


_SEED_TABLES: tuple[Table, ...] = tuple(
    cast(Table, model.__table__) for model in (GpuSku, System, ModelCard))
"""The tables ``seed_database`` writes, in the order their foreign keys need."""


@dataclass(frozen=True)
class _SeedSnapshot:
    """What ``seed_database`` wrote into an empty catalog: each table's rows, and the revision."""

    rows: tuple[list[dict[str, Any]], ...]
    revision: int


class _MigratedDatabases:
    """This process's migrated databases, one per backend, each made on first use and kept
    until the run ends (with its engine).

    ``backend`` is a parametrised session fixture, and pytest-xdist's ``--dist loadfile`` runs
    a file's SQLite cases and then its PostgreSQL ones, so a worker switches backend at nearly
    every file; pytest tears a session fixture down at each switch. The databases live here,
    outside that cycle, so that each worker migrates each backend once instead of once per
    file. Isolation is unchanged: ``session_factory`` empties every table after each test,
    as it always has within one backend's stretch.
    """

    def __init__(self, sqlite_dir: Path) -> None:
        self._sqlite_dir = sqlite_dir
        self._urls: dict[str, str] = {}
        self._engines: dict[str, Engine] = {}
        self._schemas: list[_PostgresSchema] = []
        self._seeded: dict[str, _SeedSnapshot] = {}

    def url(self, backend: str) -> str:
        if backend not in self._urls:
            if backend == "sqlite":
                url = f"sqlite:///{self._sqlite_dir / 'sizer.db'}"
            else:
                schema = _PostgresSchema(_postgres_base_url())
                self._schemas.append(schema)
                url = schema.url
            migrate.upgrade(url)
            self._urls[backend] = url
        return self._urls[backend]

    def engine(self, url: str) -> Engine:
        if url not in self._engines:
            self._engines[url] = make_engine(url)
        return self._engines[url]

    def seed(self, engine: Engine) -> None:
        """The shipped seed catalog, committed, into an empty catalog.

        The first time per database this is ``seed_database`` itself; its rows are then kept
        and later calls write those same rows again (one multi-row INSERT per table, new
        ``updated_at`` and a new revision token, as a fresh seed would give them), which skips
        re-reading and re-counting the seed files and the ORM's row-by-row flush. A catalog
        that is not empty is seeded by ``seed_database``, which merges."""
        url = engine.url.render_as_string(hide_password=False)
        snapshot = self._seeded.get(url)
        with engine.begin() as connection:
            empty = all(connection.execute(select(table.c.id).limit(1)).first() is None
                        for table in _SEED_TABLES)
            if snapshot is not None and empty:
                now = utcnow()
                for table, rows in zip(_SEED_TABLES, snapshot.rows, strict=True):
                    connection.execute(insert(table), [{**row, "updated_at": now} for row in rows])
                connection.execute(update(CatalogRevision).where(CatalogRevision.id == 1)
                                   .values(revision=snapshot.revision, token=uuid.uuid4().hex))
                return
        with make_session_factory(engine).begin() as session:
            seed_database(session)
        if snapshot is None and empty:
            with engine.connect() as connection:
                captured = tuple(
                    [dict(row._mapping) for row in
                     connection.execute(select(table).order_by(table.c.id))]
                    for table in _SEED_TABLES)
                revision = connection.execute(
                    select(CatalogRevision.revision).where(CatalogRevision.id == 1)).scalar_one()
            self._seeded[url] = _SeedSnapshot(captured, int(revision))

    def close(self) -> None:
        for engine in self._engines.values():
            engine.dispose()
        for schema in self._schemas:
            schema.drop()


@pytest.fixture(scope="session")
def _migrated_databases(sqlite_dir: Path) -> Iterator[_MigratedDatabases]:
    databases = _MigratedDatabases(sqlite_dir)
    try:
        yield databases
    finally:
        databases.close()


@pytest.fixture(scope="session")
def database_url(backend: str, _migrated_databases: _MigratedDatabases) -> str:
    """A database migrated to head with the real migrations, once per process and backend."""
    return _migrated_databases.url(backend)


@pytest.fixture(scope="session")
def engine(database_url: str, _migrated_databases: _MigratedDatabases) -> Engine:
    """One engine per backend for the whole run."""
    return _migrated_databases.engine(database_url)


@pytest.fixture
def session_factory(engine: Engine) -> Iterator[SessionFactory]:
    """Sessions on the migrated database; the catalog is emptied after the test."""
    yield make_session_factory(engine)
    with engine.begin() as connection:
        for table in ("audit_log", "staff_session", "staff_user"):  # staff desk
            connection.execute(text(f"DELETE FROM {table}"))
        for table in ("quote_line", "quote_request", "api_key", "partner"):  # partner API
            connection.execute(text(f"DELETE FROM {table}"))
        connection.execute(text("DELETE FROM hub_config"))  # fetched Hub configs
        for table in ("system", "gpu_sku", "model_card"):
            connection.execute(text(f"DELETE FROM {table}"))
        connection.execute(text("UPDATE catalog_revision SET revision = 0, token = 'initial'"))


@pytest.fixture
def seed_catalog(engine: Engine,
                 _migrated_databases: _MigratedDatabases) -> Callable[[], None]:
    """``seed_catalog()``: the shipped seed catalog, committed, as ``seed_database`` writes it
    (``_MigratedDatabases.seed``); ``session_factory`` empties it after the test."""
    return lambda: _migrated_databases.seed(engine)


@pytest.fixture
def session(session_factory: SessionFactory) -> Iterator[Session]:
    """A session for the test body; anything left uncommitted is rolled back."""
    with session_factory() as session:
        yield session
        session.rollback()


# --- builders ------------------------------------------------------------------


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def build_gpu(session: Session, **overrides: Any) -> GpuSku:
    """A valid GPU row (flushed, not committed); override any column."""
    values: dict[str, Any] = {
        "slug": _unique("gpu"),
        "name": "Test GPU",
        "architecture": "Blackwell",
        "compute_capability": "12.0",
        "memory_nominal_gb": 96,
        "usable_bytes": 97887 * 1024**2,
        "usable_basis": "test",
        "memory_type": "GDDR7",
        "memory_bandwidth_gbps": 1792.0,
        "bf16_dense_tflops": 503.8,
        "fp8_dense_tflops": None,
        "fp4_dense_tflops": None,
        "interconnect": "pcie",
        "interconnect_bandwidth_gbps": 128.0,
        "max_power_w": 600,
        "form_factor": "dual-slot",
        "mig_instances": 4,
        "price_eur_net": Decimal("9999.00"),
        "stock_status": "in_stock",
        "product_url": None,
        "active": True,
        "sources": ["S1: test"],
        **overrides,
    }
    row = GpuSku(**values)
    session.add(row)
    session.flush()
    return row


def build_system(session: Session, **overrides: Any) -> System:
    """A valid system row; builds its GPU unless ``gpu_sku`` is given."""
    gpu = overrides.pop("gpu_sku", None) or build_gpu(session)
    values: dict[str, Any] = {
        "slug": _unique("sys"),
        "name": "Test workstation",
        "kind": "workstation",
        "gpu_sku_id": gpu.id,
        "gpu_count": 2,
        "gpu_interconnect": "PCIe 5.0",
        "host_ram_gb": 256,
        "price_eur_net": None,
        "product_url": None,
        "stock_status": "on_request",
        "active": True,
        **overrides,
    }
    row = System(**values)
    session.add(row)
    session.flush()
    return row


def build_model(session: Session, **overrides: Any) -> ModelCard:
    """A valid model card row (counts are made up; the seed computes real ones)."""
    values: dict[str, Any] = {
        "slug": _unique("model"),
        "hf_id": "org/test-model",
        "family": "llama",
        "config": {"model_type": "llama"},
        "params_total": 1000,
        "params_active": 1000,
        "params_linear": 800,
        "params_embedding": 100,
        "params_lm_head": 100,
        "params_norm": 0,
        "params_other": 0,
        "max_positions": 4096,
        "license": "test",
        "gated": False,
        "active": True,
        **overrides,
    }
    row = ModelCard(**values)
    session.add(row)
    session.flush()
    return row


@pytest.fixture
def make_gpu() -> Callable[..., GpuSku]:
    """``make_gpu(session, **overrides)``."""
    return build_gpu


@pytest.fixture
def make_system() -> Callable[..., System]:
    """``make_system(session, **overrides)``."""
    return build_system


@pytest.fixture
def make_model() -> Callable[..., ModelCard]:
    """``make_model(session, **overrides)``."""
    return build_model
