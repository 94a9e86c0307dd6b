"""What the deployment tests share: a throwaway PostgreSQL database, free ports, waiting for an
address to answer, skip-or-fail by CI, and the built image run as a container with buildah."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NoReturn

import psycopg
import pytest
from sqlalchemy.engine import make_url

from tools.image import buildah

POSTGRES_ENV = "SIZER_TEST_POSTGRES_URL"
DEFAULT_POSTGRES_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def skip_or_fail(reason: str) -> NoReturn:
    """Skip with the reason; under CI=true fail instead (CI installs what these tests need)."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: the deployment tests must run)", pytrace=False)
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(url: str, timeout_s: float = 60) -> None:
    """Until ``url`` answers 200 (anything else, or no answer, is retried)."""
    deadline = time.monotonic() + timeout_s
    last = "no answer"
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except urllib.error.HTTPError as exc:
            last = f"status {exc.code}"
        except OSError as exc:
            last = str(exc)
        time.sleep(0.2)
    raise AssertionError(f"{url} did not answer 200 within {timeout_s} s ({last})")


@contextmanager
def fresh_database(prefix: str) -> Iterator[str]:
    """A new, empty database on the test server (never the shared ``test`` one), dropped after."""
    server = os.environ.get(POSTGRES_ENV, "").strip() or DEFAULT_POSTGRES_URL
    admin = make_url(server).set(drivername="postgresql").render_as_string(hide_password=False)
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    try:
        connection = psycopg.connect(admin, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        skip_or_fail(f"PostgreSQL at {make_url(server).render_as_string()} is unreachable: "
                     f"{str(exc).strip().splitlines()[0]}")
    with connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    try:
        yield make_url(server).set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def stop(process: subprocess.Popen[Any], timeout_s: float = 20) -> None:
    """SIGTERM to the process group (the command and all it started), SIGKILL if it lingers."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=timeout_s)


@dataclass(frozen=True)
class Container:
    """A working container of the image: commands run in it as the image's user, on the host's
    network (buildah's chroot isolation; no daemon)."""

    name: str
    env: Mapping[str, str]
    config: Mapping[str, Any]

    @classmethod
    @contextmanager
    def start(cls, image: str, env: Mapping[str, str]) -> Iterator[Container]:
        name = f"sizer-test-{uuid.uuid4().hex[:8]}"
        subprocess.run([*buildah(), "from", "--pull-never", "--name", name, image], check=True,
                       stdout=subprocess.DEVNULL)
        try:
            inspected = json.loads(subprocess.run(
                [*buildah(), "inspect", "--type", "image", image],
                check=True, capture_output=True, text=True,
            ).stdout)
            yield cls(name, dict(env), inspected["Docker"]["config"])
        finally:
            subprocess.run([*buildah(), "rm", name], check=False, stdout=subprocess.DEVNULL)

    def _command(self, *argv: str) -> list[str]:
        flags = [f"--env={key}={value}" for key, value in self.env.items()]
        return [*buildah(), "run", "--isolation", "chroot", "--network", "host", *flags,
                self.name, "--", *argv]

    def run(self, *argv: str) -> str:
        done = subprocess.run(self._command(*argv), capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{' '.join(argv)} failed: {done.stderr.strip()}"
        return done.stdout

    def sizer(self, *args: str) -> str:
        return self.run("sizer", *args)

    @contextmanager
    def serve(self, port: int) -> Iterator[subprocess.Popen[bytes]]:
        """The image's own command (CMD) on a loopback port, stopped afterwards."""
        process = subprocess.Popen(
            self._command("sizer", "serve", "--host", "127.0.0.1", "--port", str(port)),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )
        try:
            yield process
        finally:
            stop(process)
