"""A small asyncio HTTP/1.1 client with keep-alive, for load on loopback.

Why not httpx or aiohttp: on a 2-core machine the load generator shares the CPU with the
server; a bare client spends far less of it per request, so the figures say more about the
service. It speaks just enough HTTP/1.1 for our own server (Content-Length or chunked bodies).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


@dataclass(frozen=True)
class Outcome:
    started: float
    seconds: float
    status: int  # 0: the connection failed
    body: bytes = b""
    location: str = ""


class Connection:
    def __init__(self, base_url: str) -> None:
        parts = urlsplit(base_url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def _connect(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(OSError):
                await self.writer.wait_closed()
        self.reader = self.writer = None

    async def send(self, call: Call, timeout_s: float = 30) -> Outcome:
        started = time.perf_counter()
        try:
            if self.writer is None:
                await self._connect()
            assert self.reader is not None and self.writer is not None
            head = [f"{call.method} {call.path} HTTP/1.1", f"Host: {self.host}:{self.port}",
                    f"Content-Length: {len(call.body)}"]
            head += [f"{k}: {v}" for k, v in call.headers.items()]
            self.writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + call.body)
            await self.writer.drain()
            status, body, location, keep = await asyncio.wait_for(self._read(), timeout_s)
            if not keep:
                await self.close()
            return Outcome(started, time.perf_counter() - started, status, body, location)
        except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError):
            await self.close()
            return Outcome(started, time.perf_counter() - started, 0)

    async def _read(self) -> tuple[int, bytes, str, bool]:
        assert self.reader is not None
        status_line = await self.reader.readline()
        if not status_line:
            raise ConnectionResetError("closed")
        status = int(status_line.split()[1])
        length = 0
        chunked = False
        keep = True
        location = ""
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            name = name.strip().lower()
            value = value.strip()
            if name == "content-length":
                length = int(value)
            elif name == "transfer-encoding" and "chunked" in value.lower():
                chunked = True
            elif name == "connection" and value.lower() == "close":
                keep = False
            elif name == "location":
                location = value
        if chunked:
            body = b""
            while True:
                size = int((await self.reader.readline()).strip() or b"0", 16)
                if size == 0:
                    await self.reader.readline()
                    break
                body += await self.reader.readexactly(size)
                await self.reader.readline()
        else:
            body = await self.reader.readexactly(length) if length else b""
        return status, body, location, keep


def percentile(sorted_values: list[float], fraction: float) -> float:
    if not sorted_values:
        return float("nan")
    index = min(len(sorted_values) - 1, max(0, round(fraction * (len(sorted_values) - 1))))
    return sorted_values[index]
