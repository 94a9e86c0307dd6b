"""A real service for the load and fault scripts: its own PostgreSQL database, migrated and
seeded, a partner key, and `sizer serve --workers N` on a loopback port.

Loopback only, and everything it creates goes away when the ``with`` block ends: the server
process and the database.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parent.parent
SIZER = [sys.executable, "-m", "app.cli"]
DEFAULT_SERVER = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


@dataclass(frozen=True)
class Service:
    base_url: str
    database_url: str
    api_key: str
    pid: int


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _admin_dsn(server_url: str) -> str:
    url = make_url(server_url).set(drivername="postgresql")
    return url.render_as_string(hide_password=False)


def _sizer(env: dict[str, str], *args: str) -> str:
    run = subprocess.run([*SIZER, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=300)
    if run.returncode != 0:
        raise RuntimeError(f"sizer {' '.join(args)} failed: {run.stderr.strip()}")
    return run.stdout


def wait_ready(base_url: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base_url}/readyz", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{base_url} did not become ready in {timeout_s} s")


@contextmanager
def running_service(
    server_url: str = DEFAULT_SERVER, workers: int = 2, extra_env: dict[str, str] | None = None
) -> Iterator[Service]:
    """Create a database on the server, prepare it, serve it; drop everything afterwards."""
    name = f"sizer_load_{uuid.uuid4().hex[:10]}"
    admin = _admin_dsn(server_url)
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    database_url = make_url(server_url).set(database=name).render_as_string(hide_password=False)
    env = {**os.environ, "SIZER_DATABASE_URL": database_url, **(extra_env or {})}
    server: subprocess.Popen[bytes] | None = None
    try:
        _sizer(env, "db", "upgrade")
        _sizer(env, "db", "seed")
        # A key whose limit the load cannot reach: the load measures the service, not the
        # rate limiter (tests/api cover that).
        out = _sizer(env, "apikey", "create", "--new-partner", "load-test",
                     "--rate-limit", "1000000")
        match = re.search(r"^key:\s+(\S+)", out, re.MULTILINE)
        if match is None:
            raise RuntimeError(f"no key in `sizer apikey create` output: {out!r}")
        port = _free_port()
        server = subprocess.Popen(
            [*SIZER, "serve", "--host", "127.0.0.1", "--port", str(port),
             "--workers", str(workers)],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        base_url = f"http://127.0.0.1:{port}"
        wait_ready(base_url)
        yield Service(base_url, database_url, match.group(1), server.pid)
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
