"""One htmx result fragment, asked of the whole application in this process: what
``benchmarks/test_fragment_speed.py`` and ``benchmarks/fragment_report.py`` time.

The request goes through the ASGI application as a browser's htmx request reaches it (the
middleware, the route, the form, the sizing, the view, the German render, the response), on a
migrated and seeded SQLite database of its own; no socket and no HTTP client, so the time is
the server's alone. Uncached: :meth:`FragmentBench.forget` drops the application's caches (the
remembered answers and rendered fragments) but keeps the catalog snapshot, which a running
server holds between requests.
"""

from __future__ import annotations

import asyncio
import gzip
import tempfile
import threading
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from app.catalog.seed import seed_database
from app.config import load_settings
from app.db import migrate
from app.db.session import make_engine, make_session_factory
from app.main import create_app


@dataclass(frozen=True)
class Job:
    """A change on a page: the route it posts to and the form's fields."""

    name: str
    path: str
    fields: dict[str, str]


JOBS = (
    Job("fine-tune: Llama 3.1 8B LoRA (the page's default)", "/",
        {"model": "llama-3.1-8b", "method": "lora"}),
    Job("fine-tune: Llama 3.3 70B full, 4,096 tokens", "/",
        {"model": "llama-3.3-70b", "method": "full", "seq": "4096"}),
    Job("fine-tune: Qwen3 30B-A3B QLoRA (MoE)", "/",
        {"model": "qwen3-30b-a3b", "method": "qlora"}),
    Job("serve: Llama 3.1 8B, 20 users", "/serve", {"model": "llama-3.1-8b", "users": "20"}),
    Job("serve: Llama 3.3 70B, 64 users", "/serve", {"model": "llama-3.3-70b", "users": "64"}),
)
"""Catalog models sized against the whole seed catalog (every card and system)."""

HEADERS = [(b"host", b"bench"), (b"hx-request", b"true"), (b"accept-language", b"de"),
           (b"accept-encoding", b"gzip, deflate, br, zstd"),  # as Chromium sends it
           (b"origin", b"http://bench"), (b"referer", b"http://bench/"),
           (b"content-type", b"application/x-www-form-urlencoded")]


class FragmentBench:
    """The application on its own database and event loop; :meth:`ask` sends one request.

    The loop runs in a thread of its own for the bench's life, as a server's does: the thread
    pool that the routes hand work to belongs to the loop's long-lived root task, so a worker
    thread is started once, not for every request."""

    def __init__(self, database_url: str) -> None:
        self.app = create_app(load_settings(database_url=database_url))
        self.loop = asyncio.new_event_loop()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="bench-loop", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        async def forever() -> None:
            while not self._stop.is_set():
                await asyncio.sleep(0.05)

        self.loop.run_until_complete(forever())

    def forget(self) -> None:
        """Drop the remembered answers and rendered fragments (the catalog snapshot stays)."""
        caches = self.app.state.caches
        caches.estimates.forget()
        caches.fragments.forget()

    def ask(self, job: Job) -> tuple[int, bytes]:
        """The status and body of the htmx answer to ``job`` (gzipped as a browser asks for
        it; unzipped here, outside the server's time)."""
        return asyncio.run_coroutine_threadsafe(self._ask(job), self.loop).result()

    async def _ask(self, job: Job) -> tuple[int, bytes]:
        body = urlencode(job.fields).encode()
        scope: dict[str, Any] = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": "POST", "scheme": "http", "path": job.path, "raw_path": job.path.encode(),
            "query_string": b"", "root_path": "", "client": ("127.0.0.1", 50000),
            "server": ("bench", 80),
            "headers": [*HEADERS, (b"content-length", str(len(body)).encode())],
        }
        received = False
        status = 0
        chunks: list[bytes] = []
        zipped: list[bool] = []

        async def receive() -> dict[str, Any]:
            nonlocal received
            if received:
                return {"type": "http.disconnect"}
            received = True
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: MutableMapping[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                zipped.append((b"content-encoding", b"gzip") in message.get("headers", []))
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self.app(scope, receive, send)
        body = b"".join(chunks)
        return status, gzip.decompress(body) if any(zipped) else body

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.loop.close()


@contextmanager
def fragment_bench() -> Iterator[FragmentBench]:
    """A :class:`FragmentBench` on a fresh, seeded SQLite database, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="sizer-bench-") as folder:
        database_url = f"sqlite:///{Path(folder) / 'sizer.db'}"
        migrate.upgrade(database_url)
        engine = make_engine(database_url)
        with make_session_factory(engine).begin() as session:
            seed_database(session)
        engine.dispose()
        bench = FragmentBench(database_url)
        try:
            for job in JOBS:  # the catalog snapshot, templates and catalogs read once
                bench.ask(job)
            yield bench
        finally:
            bench.close()
