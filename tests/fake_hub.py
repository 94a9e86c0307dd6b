"""A fake Hugging Face Hub on 127.0.0.1: a real HTTP server in a thread, serving the paths
``huggingface_hub`` and ``app/catalog/hub.py`` ask for, with the Hub's own error answers.

* ``GET /api/models/{owner}/{name}`` and ``.../revision/{revision}``: the model info
  (``{"id": ..., "sha": ...}``); unknown repository 404 ``X-Error-Code: RepoNotFound``,
  unknown revision 404 ``RevisionNotFound``.
* ``GET /{owner}/{name}/resolve/{revision}/config.json``: the file (``hf_quant_config.json``
  too, for a repository that has one, listed in the info's ``siblings``); a gated repository answers
  401 ``X-Error-Code: GatedRepo`` unless the request carries its token; a repository without
  the file 404 ``EntryNotFound``; any other file (weights) 404, and is counted, so a test can
  prove none was asked for.

Behaviours per repository: ``slow_s`` (wait before answering the file), ``drip`` (send the
file a byte at a time, ``slow_s`` between bytes), ``oversize`` (a config.json of that many
bytes, with ``declare_length`` saying so in Content-Length or not), ``redirect`` (answer the
file with a 302 to that address). Every request is logged
(``requests``). No test reaches the internet: the Hub the app talks to is this server
(``SIZER_HUB_ENDPOINT``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit


@dataclass
class FakeRepo:
    repo_id: str
    config: dict[str, Any] | None
    revisions: dict[str, str] = field(default_factory=dict)
    """Revision name -> commit sha (``main`` always added)."""
    gated_token: str | None = None
    slow_s: float = 0.0
    drip: bool = False
    oversize: int = 0
    declare_length: bool = True
    redirect: str | None = None
    """Answer the config.json with ``302 Location: redirect`` (absolute or relative)."""
    hf_quant_config: dict[str, Any] | None = None
    """ModelOpt's ``hf_quant_config.json``: listed in the model info's ``siblings`` and served."""


class FakeHub:
    """The server, its repositories and what it was asked."""

    def __init__(self) -> None:
        self.repos: dict[str, FakeRepo] = {}
        self.requests: list[tuple[str, str]] = []
        """(path, Authorization header) of every request, in order."""
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def do_GET(self) -> None:
                hub._answer(self)

            def do_HEAD(self) -> None:
                hub._answer(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def add(self, repo: FakeRepo) -> FakeRepo:
        repo.revisions.setdefault("main", _sha(repo.repo_id + "@main"))
        self.repos[repo.repo_id.lower()] = repo
        return repo

    def paths(self) -> list[str]:
        with self._lock:
            return [path for path, _ in self.requests]

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()

    def _answer(self, handler: BaseHTTPRequestHandler) -> None:
        path = unquote(urlsplit(handler.path).path)
        with self._lock:
            self.requests.append((path, handler.headers.get("Authorization", "")))
        parts = path.strip("/").split("/")
        if parts[:2] == ["api", "models"] and len(parts) >= 4:
            self._model_info(handler, parts[2:])
        elif len(parts) >= 5 and parts[2] == "resolve":
            self._resolve(handler, f"{parts[0]}/{parts[1]}", parts[3], "/".join(parts[4:]))
        else:
            _send(handler, 404, b'{"error": "not found"}')

    def _model_info(self, handler: BaseHTTPRequestHandler, parts: list[str]) -> None:
        repo = self.repos.get(f"{parts[0]}/{parts[1]}".lower())
        if repo is None:
            _send(handler, 404, b'{"error": "Repository not found"}', code="RepoNotFound")
            return
        revision = "/".join(parts[3:]) if len(parts) > 3 and parts[2] == "revision" else "main"
        sha = repo.revisions.get(revision, revision if revision in repo.revisions.values()
                                 else None)
        if sha is None:
            _send(handler, 404, b'{"error": "Invalid rev id"}', code="RevisionNotFound")
            return
        files = ["config.json"] + (["hf_quant_config.json"] if repo.hf_quant_config else [])
        _send(handler, 200, json.dumps({"id": repo.repo_id, "sha": sha,
                                        "gated": repo.gated_token is not None,
                                        "siblings": [{"rfilename": name} for name in files]
                                        }).encode())

    def _resolve(self, handler: BaseHTTPRequestHandler, repo_id: str, revision: str,
                 filename: str) -> None:
        repo = self.repos.get(repo_id.lower())
        if repo is None:
            _send(handler, 404, b'{"error": "Repository not found"}', code="RepoNotFound")
            return
        if repo.redirect is not None:
            handler.send_response(302)
            handler.send_header("Location", repo.redirect)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        if repo.gated_token is not None and (
                handler.headers.get("Authorization") != f"Bearer {repo.gated_token}"):
            _send(handler, 401, b'{"error": "Access to this model is restricted"}',
                  code="GatedRepo")
            return
        if filename == "hf_quant_config.json" and repo.hf_quant_config is not None:
            _send(handler, 200, json.dumps(repo.hf_quant_config).encode())
            return
        if filename != "config.json" or repo.config is None:
            _send(handler, 404, b'{"error": "Entry not found"}', code="EntryNotFound")
            return
        if repo.slow_s and not repo.drip and self.stopping.wait(repo.slow_s):
            return
        body = json.dumps(repo.config).encode()
        if repo.oversize:
            body = _padded(repo.config, repo.oversize)
        if repo.drip:
            self._drip(handler, body, repo.slow_s)
            return
        _send(handler, 200, body, declare_length=repo.declare_length)

    def _drip(self, handler: BaseHTTPRequestHandler, body: bytes, gap_s: float) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        try:
            for index in range(len(body)):
                handler.wfile.write(body[index:index + 1])
                handler.wfile.flush()
                if self.stopping.wait(gap_s):
                    return
        except OSError:  # the client hung up, as it should
            return


def _sha(text: str) -> str:
    import hashlib

    return hashlib.sha1(text.encode()).hexdigest()


def _padded(config: dict[str, Any], size: int) -> bytes:
    """A valid config.json of exactly ``size`` bytes (a long note)."""
    base = json.dumps({**config, "note": ""}).encode()
    return base.replace(b'"note": ""', b'"note": "' + b"x" * (size - len(base)) + b'"')


def _send(handler: BaseHTTPRequestHandler, status: int, body: bytes, *, code: str | None = None,
          declare_length: bool = True) -> None:
    try:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        if code is not None:
            handler.send_header("X-Error-Code", code)
        if declare_length:
            handler.send_header("Content-Length", str(len(body)))
        else:
            handler.send_header("Connection", "close")
        handler.end_headers()
        if handler.command != "HEAD":
            handler.wfile.write(body)
        if not declare_length:
            handler.close_connection = True
    except OSError:  # the client hung up (a refused oversize answer)
        return


def running_hub() -> Iterator[FakeHub]:
    """A started fake Hub, stopped afterwards (a fixture body)."""
    hub = FakeHub()
    hub.start()
    try:
        yield hub
    finally:
        hub.stop()
