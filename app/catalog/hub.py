"""Models by their Hugging Face Hub repository id: ``Qwen/Qwen3-8B`` (``Qwen/Qwen3-8B@v1.0``
for a branch, tag or commit) is sized from the repository's config.json.

The calculator's model field, the API's ``model`` and ``sizer estimate --model`` all take a
repository id where they take a catalog slug (a slug never holds a ``/``), and all three go
through :func:`choose_model`:

* a repository the catalog holds (its ``hf_id``, any case, no revision asked) is that catalog
  model: its counts were checked against transformers, and no request leaves the shop;
* otherwise the config.json is read from the ``hub_config`` table when it was fetched before
  (for a branch or tag within ``SIZER_HUB_CACHE_HOURS``, for a commit id for good), else
  fetched: the model info (``GET {endpoint}/api/models/{repo}``, or
  ``.../revision/{revision}``, with ``expand=sha``) gives the commit, then
  ``GET {endpoint}/{repo}/resolve/{commit}/config.json`` the file at that very commit, and
  both are kept in the table. Nothing else is ever requested: no weights, no other file.

The requests use ``huggingface_hub``'s HTTP client, its headers (user agent; the token only
when ``SIZER_HUB_TOKEN`` is set, never the machine's own login: ``token=False``) and its
reading of the Hub's error answers (``hf_raise_for_status``: gated, missing repository,
missing revision, missing file), but read the bodies themselves, so that every cost is bounded
whatever the other end sends:

* a repository id is at most :data:`MAX_REPO_ID_CHARS` characters of ``[A-Za-z0-9._-]`` in two
  parts, a revision at most :data:`MAX_REVISION_CHARS`; anything else is refused before any
  request;
* one look-up (both requests, every byte) has ``SIZER_HUB_TIMEOUT_S`` in all: a server that
  answers slowly, or drips its answer, is cut off at the deadline;
* the model info may be :data:`MAX_INFO_BYTES`, the config.json
  :data:`~app.catalog.inline_config.MAX_DOCUMENT_BYTES` (read with the one config.json reader
  every surface uses, which summarises a quantised export's layer list and holds what is kept
  to :data:`~app.catalog.inline_config.MAX_CONFIG_BYTES`), an error answer
  :data:`MAX_ERROR_BYTES`; a declared or actual larger answer is refused without reading on;
  answers are asked for uncompressed and a compressed one is refused, so no decompression can
  outgrow the limits;
* one fetch per repository and revision at a time in a process (whoever asks while it runs
  waits for its answer), and at most :data:`MAX_CONCURRENT_FETCHES` fetches at once; beyond
  that the answer is "busy, try again" at once (:class:`HubFlights`, on ``Caches.hub``).

Errors are data with the field ``model``: an id that is not one (422), a repository or
revision the Hub does not have (404), a gated repository the shop's token cannot read, a
repository without config.json or with one the reader refuses (422), the Hub unreachable, slow
or busy (503; a config.json fetched before is used instead when there is one). Each says to
give the config.json itself instead, which always works.
"""

from __future__ import annotations

import ipaddress
import json
import re
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final, TypeVar, cast
from urllib.parse import quote, urljoin, urlsplit

import httpx2
from huggingface_hub import get_session, hf_raise_for_status
from huggingface_hub.errors import (
    DisabledRepoError,
    GatedRepoError,
    HfHubHTTPError,
    OfflineModeIsEnabled,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.utils._headers import build_hf_headers
from sqlalchemy import delete, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from app.catalog import inline_config
from app.catalog.schemas import Catalog
from app.config import DEFAULT_HUB_ENDPOINT, Settings
from app.db.base import utcnow
from app.db.tables import HubConfig
from app.errors import DomainError, InvalidInput, NotFound, TooManyRequests, Unavailable

_T = TypeVar("_T")

MAX_REPO_PART_CHARS: Final = 96
"""Longest owner or name in a repository id (the Hub's own limit, ``validate_repo_id``)."""
MAX_REPO_ID_CHARS: Final = 2 * MAX_REPO_PART_CHARS + 1
"""Longest repository id, ``owner/name``."""
MAX_REVISION_CHARS: Final = 128
"""Longest revision: a branch, a tag (``refs/pr/12``) or a 40-character commit id."""
MAX_MODEL_CHARS: Final = MAX_REPO_ID_CHARS + 1 + MAX_REVISION_CHARS
"""Longest ``model`` value a surface passes on (``owner/name@revision``)."""
MAX_INFO_BYTES: Final = 1024 * 1024
"""Largest model-info answer read (asked with ``expand=sha``: a hundred bytes from the Hub;
a whole model info with thousands of files stays far below 1 MB)."""
MAX_ERROR_BYTES: Final = 16 * 1024
"""Of an error answer, only this much is read (its message is all that is used)."""
HF_QUANT_CONFIG: Final = "hf_quant_config.json"
"""NVIDIA ModelOpt's quantisation file beside config.json (releases by ModelOpt 0.29 and
before), fetched when the model info lists it; vLLM reads it as the ``quantization_config``
(``vllm/transformers_utils/config.py``). Read up to the config.json's
:data:`~app.catalog.inline_config.MAX_DOCUMENT_BYTES`."""
MAX_CONCURRENT_FETCHES: Final = 4
"""Hub look-ups one process runs at once; a request beyond that is told to try again."""
MAX_WAITING: Final = 8
"""Requests one process lets wait for a fetch another request is running (the same repository
and revision); one more is told to try again at once, so no number of identical requests can
park more than this many worker threads (without the bound 45 waited, and /healthz took
6.1 s instead of 0.05 s)."""
NOT_FOUND_MEMORY_S: Final = 300.0
"""How long a process remembers that the Hub has no such repository, revision or config.json
(or refused it): five minutes, so the same wrong id asked again costs no Hub request (and
none of the shop's token's quota) while a repository created since is found soon after."""
OUTAGE_MEMORY_S: Final = 10.0
"""How long a process remembers that the Hub was unreachable or slow for a repository: a few
seconds, enough that a burst of retries does not queue behind a dead Hub."""
MAX_REMEMBERED_FAILURES: Final = 1024
"""Failed look-ups one process remembers; the oldest is forgotten first."""
MAX_BRANCH_REVISIONS: Final = 4
"""Branch or tag fetches kept per repository in ``hub_config`` (``main`` and three others);
fetching a fifth evicts the one fetched longest ago. Commit ids (pinned revisions) are kept
for good, as before: they never change and a look-up by one only succeeds for a commit the
repository has."""
MAX_REDIRECTS: Final = 3
"""Redirects one Hub request follows (the Hub redirects a renamed repository once)."""
HUB_HOST_SUFFIXES: Final = (".huggingface.co", ".hf.co")
"""Hosts the public Hub may redirect to besides its own (its CDN and storage), over https
only; a mirror (``SIZER_HUB_ENDPOINT``) is followed to its own origin only."""
DEFAULT_REVISION: Final = "main"
"""The revision looked up when none is given (the Hub's default branch name)."""
LIBRARY_NAME: Final = "gpu-sizer"
"""What the user agent says is asking (huggingface_hub's ``library_name``)."""

_PART = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?"
_REPO_ID = re.compile(rf"{_PART}/{_PART}")
_REVISION = re.compile(r"[A-Za-z0-9._/-]{1,128}")
_COMMIT = re.compile(r"[0-9a-f]{40}")
_FORWARDED_ERROR_HEADERS = ("x-error-code", "x-error-message", "content-type")


@dataclass(frozen=True, slots=True)
class RepoRef:
    """A repository id and the revision asked for (:data:`DEFAULT_REVISION` when none was)."""

    repo_id: str
    revision: str = DEFAULT_REVISION
    explicit_revision: bool = False

    @property
    def key(self) -> tuple[str, str]:
        """What the cache and the fetches are keyed by: the Hub's ids ignore case."""
        return self.repo_id.lower(), self.revision

    @property
    def text(self) -> str:
        return f"{self.repo_id}@{self.revision}" if self.explicit_revision else self.repo_id


@dataclass(frozen=True, slots=True)
class HubModel:
    """A repository's config.json as fetched: the Hub's spelling of the id, the revision asked
    for, the commit it was read at, the document, and when it was fetched."""

    repo_id: str
    revision: str
    commit_sha: str
    config: Mapping[str, Any]
    fetched_at: datetime


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """What a surface's ``model`` names: a catalog model's slug, or a Hub repository's
    config.json (``hub`` says which and at which commit)."""

    slug: str | None = None
    config: Mapping[str, Any] | None = None
    hub: HubModel | None = None


def is_repo_id(model: str) -> bool:
    """Whether a surface's ``model`` value means a Hub repository (a slug has no ``/``)."""
    return "/" in model


def parse_ref(model: str) -> RepoRef:
    """``owner/name`` or ``owner/name@revision``, held to the Hub's rules and this module's
    bounds; :class:`InvalidInput` on field ``model`` otherwise."""
    text = model.strip()
    repo, at, revision = text[:MAX_MODEL_CHARS + 1].partition("@")
    valid = (len(text) <= MAX_MODEL_CHARS and len(repo) <= MAX_REPO_ID_CHARS
             and _REPO_ID.fullmatch(repo) is not None and "--" not in repo
             and ".." not in repo)
    if at:
        valid = valid and _REVISION.fullmatch(revision) is not None and ".." not in revision
    if not valid:
        raise InvalidInput(
            "not a Hugging Face repository id: owner/name (letters, digits, '.', '_' and '-', "
            f"at most {MAX_REPO_PART_CHARS} each), optionally @revision",
            field="model", key="hub_repo_invalid", params={"max": MAX_REPO_PART_CHARS},
        )
    if at:
        return RepoRef(repo, revision, explicit_revision=True)
    return RepoRef(repo)


@dataclass(frozen=True, slots=True)
class HubAccess:
    """Where and how to ask the Hub (from the settings), this process's fetches, and
    ``admit``: called before a look-up reaches the Hub (none is kept, none remembered to have
    failed), to refuse it (:class:`~app.errors.TooManyRequests`) for a client over its limit
    (the storefront's anonymous look-ups, ``SIZER_HUB_LOOKUPS_PER_MINUTE``)."""

    flights: HubFlights
    endpoint: str = DEFAULT_HUB_ENDPOINT
    token: str | None = None
    timeout_s: float = 10.0
    cache_hours: int = 24
    admit: Callable[[], None] | None = None

    @staticmethod
    def of(settings: Settings, flights: HubFlights,
           admit: Callable[[], None] | None = None) -> HubAccess:
        token = settings.hub_token.get_secret_value() if settings.hub_token else None
        return HubAccess(flights=flights, endpoint=settings.hub_endpoint or DEFAULT_HUB_ENDPOINT,
                         token=token, timeout_s=settings.hub_timeout_s,
                         cache_hours=settings.hub_cache_hours, admit=admit)


class _Flight:
    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: object = None
        self.error: BaseException | None = None


def _copy(error: DomainError) -> DomainError:
    """A fresh exception with the same data (one raised again and again would grow its
    traceback with every raise)."""
    return type(error)(error.reason, field=error.field, key=error.key, params=error.params)


def _memory_s(error: DomainError) -> float | None:
    """How long a failed look-up is remembered: a refusal (no such repository, revision or
    file, gated, unreadable) for minutes, an outage for seconds, "busy" not at all."""
    if isinstance(error, NotFound | InvalidInput):
        return NOT_FOUND_MEMORY_S
    if isinstance(error, Unavailable) and error.key != "hub_busy":
        return OUTAGE_MEMORY_S
    return None


class HubFlights:
    """This process's Hub fetches under way: one per repository and revision at a time (a
    second asker waits for the first one's answer, at most ``max_waiting`` of them), at most
    ``limit`` at once, and the look-ups that failed lately (:func:`failure`). Held on
    ``Caches.hub`` by the application, or by a CLI command for its run. Thread-safe; the
    answers themselves are kept in the database."""

    def __init__(self, limit: int = MAX_CONCURRENT_FETCHES, *, max_waiting: int = MAX_WAITING,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._running: dict[tuple[str, str], _Flight] = {}
        self._slots = threading.BoundedSemaphore(limit)
        self._waiting = 0
        self._max_waiting = max_waiting
        self._failures: OrderedDict[tuple[str, str], tuple[float, DomainError]] = OrderedDict()
        self._clock = clock

    def run(self, key: tuple[str, str], fetch: Callable[[], _T], *, wait_s: float) -> _T:
        """``fetch()``, or the answer of the same fetch another thread is running; "busy"
        (503) at once when every slot, or the queue of waiters, is taken."""
        with self._lock:
            flight = self._running.get(key)
            leader = flight is None
            if flight is None:
                if not self._slots.acquire(blocking=False):
                    raise _busy()
                flight = self._running[key] = _Flight()
            elif self._waiting >= self._max_waiting:
                raise _busy()
            else:
                self._waiting += 1
        if leader:
            try:
                value = fetch()
                flight.value = value
            except DomainError as error:
                flight.error = error
                self._remember(key, error)
                raise
            except BaseException as error:
                flight.error = error
                raise
            finally:
                with self._lock:
                    del self._running[key]
                self._slots.release()
                flight.done.set()
            return value
        try:
            if not flight.done.wait(wait_s):
                raise _timeout(wait_s)
        finally:
            with self._lock:
                self._waiting -= 1
        if isinstance(flight.error, DomainError):
            raise _copy(flight.error)
        if flight.error is not None:
            raise flight.error
        return cast(_T, flight.value)

    def failure(self, key: tuple[str, str]) -> DomainError | None:
        """The error a look-up of ``key`` ended with lately (a fresh copy), else None."""
        with self._lock:
            remembered = self._failures.get(key)
            if remembered is None:
                return None
            if remembered[0] <= self._clock():
                del self._failures[key]
                return None
            return _copy(remembered[1])

    def _remember(self, key: tuple[str, str], error: DomainError) -> None:
        memory = _memory_s(error)
        if memory is None:
            return
        with self._lock:
            self._failures[key] = (self._clock() + memory, _copy(error))
            self._failures.move_to_end(key)
            while len(self._failures) > MAX_REMEMBERED_FAILURES:
                self._failures.popitem(last=False)

    def running(self) -> int:
        """Fetches under way now (for tests and metrics)."""
        with self._lock:
            return len(self._running)

    def waiting(self) -> int:
        """Requests waiting for another's fetch now (for tests)."""
        with self._lock:
            return self._waiting


def choose_model(session: Session | None, catalog: Catalog, model: str, *,
                 access: HubAccess) -> ModelChoice:
    """What ``model`` names: a catalog slug as it is; a Hub repository id as the catalog model
    of that id, else its config.json (:func:`hub_model`). ``session`` keeps fetched configs
    (``None``: no database, every look-up fetches)."""
    if not is_repo_id(model):
        return ModelChoice(slug=model)
    ref = parse_ref(model)
    if not ref.explicit_revision:
        wanted = ref.repo_id.lower()
        for record in catalog.models:
            if record.hf_id.lower() == wanted:
                return ModelChoice(slug=record.slug)
    found = hub_model(session, ref, access=access)
    return ModelChoice(config=found.config, hub=found)


def hub_model(session: Session | None, ref: RepoRef, *, access: HubAccess,
              now: Callable[[], datetime] = utcnow) -> HubModel:
    """The repository's config.json: kept, or fetched and kept (flushed, never committed:
    docs/architecture.md rule 5). A fetch the Hub cannot answer now falls back on a kept copy
    past its time, if there is one."""
    kept = _kept(session, ref) if session is not None else None
    if kept is not None and _fresh(kept, ref, access, now()):
        return kept
    try:
        remembered = access.flights.failure(ref.key)
        if remembered is not None:  # failed lately: no Hub request (nor the token's quota)
            raise remembered
        if access.admit is not None:
            access.admit()
        fetched = access.flights.run(ref.key, lambda: _fetch(ref, access, now),
                                     wait_s=access.timeout_s + 1)
    except (Unavailable, TooManyRequests):
        if kept is not None:
            return kept
        raise
    if session is not None:
        _keep(session, ref, fetched)
    return fetched


def _fresh(kept: HubModel, ref: RepoRef, access: HubAccess, now: datetime) -> bool:
    if _COMMIT.fullmatch(ref.revision):
        return True  # a commit never changes
    return now - kept.fetched_at < timedelta(hours=access.cache_hours)


def _kept(session: Session, ref: RepoRef) -> HubModel | None:
    repo_key, revision = ref.key
    row = session.scalars(
        select(HubConfig).where(HubConfig.repo_key == repo_key, HubConfig.revision == revision)
    ).one_or_none()
    if row is None:
        return None
    return HubModel(repo_id=row.repo_id, revision=row.revision, commit_sha=row.commit_sha,
                    config=row.config, fetched_at=row.fetched_at)


def _keep(session: Session, ref: RepoRef, found: HubModel) -> None:
    """Insert or refresh the row; two workers that fetched the same repository at once both
    succeed (the later one's copy stays)."""
    repo_key, revision = ref.key
    values = {"repo_key": repo_key, "repo_id": found.repo_id, "revision": revision,
              "commit_sha": found.commit_sha, "config": dict(found.config),
              "fetched_at": found.fetched_at}
    dialect = session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    statement = insert(HubConfig).values(**values)
    session.execute(statement.on_conflict_do_update(
        index_elements=["repo_key", "revision"],
        set_={name: statement.excluded[name]
              for name in ("repo_id", "commit_sha", "config", "fetched_at")},
    ))
    if not _COMMIT.fullmatch(revision):
        _evict_branches(session, repo_key)


def _evict_branches(session: Session, repo_key: str) -> None:
    """Keep the :data:`MAX_BRANCH_REVISIONS` branch or tag fetches of a repository fetched
    last; commit ids stay (each ``@branchN`` asked would add a row)."""
    rows = session.execute(
        select(HubConfig.id, HubConfig.revision).where(HubConfig.repo_key == repo_key)
        .order_by(HubConfig.fetched_at.desc(), HubConfig.id.desc())
    ).all()
    branches = [row.id for row in rows if not _COMMIT.fullmatch(row.revision)]
    if len(branches) > MAX_BRANCH_REVISIONS:
        session.execute(delete(HubConfig).where(
            HubConfig.id.in_(branches[MAX_BRANCH_REVISIONS:])))


def _fetch(ref: RepoRef, access: HubAccess, now: Callable[[], datetime]) -> HubModel:
    """Model info (for the commit), then the config.json at that commit."""
    deadline = time.monotonic() + access.timeout_s
    headers = build_hf_headers(token=access.token or False, library_name=LIBRARY_NAME,
                               headers={"Accept-Encoding": "identity"})
    info_url = f"{access.endpoint}/api/models/{ref.repo_id}"
    if ref.explicit_revision:
        info_url += f"/revision/{quote(ref.revision, safe='')}"
    try:
        info = _get(info_url, headers, MAX_INFO_BYTES, deadline, access, ref,
                    params={"expand": ["sha", "siblings"]})
        commit, repo_id = _commit_of(info, ref)
        files = f"{access.endpoint}/{ref.repo_id}/resolve/{commit}"
        body = _get(f"{files}/config.json", headers, inline_config.MAX_DOCUMENT_BYTES,
                    deadline, access, ref)
        quant = _get(f"{files}/{HF_QUANT_CONFIG}", headers, inline_config.MAX_DOCUMENT_BYTES,
                     deadline, access, ref) if _lists(info, HF_QUANT_CONFIG) else None
    except GatedRepoError as error:
        raise _refused(ref, "hub_gated", f"{ref.repo_id} is gated and the shop's Hub token "
                       "has no access to it") from error
    except RevisionNotFoundError as error:
        raise NotFound(f"{ref.repo_id} has no revision '{ref.revision}' on the Hugging Face "
                       "Hub", field="model", key="hub_revision_not_found",
                       params={"repo": ref.repo_id, "revision": ref.revision}) from error
    except RemoteEntryNotFoundError as error:
        raise _refused(ref, "hub_no_config", f"{ref.repo_id} has no config.json (not a "
                       "transformers model)") from error
    except (RepositoryNotFoundError, DisabledRepoError) as error:
        raise _not_found(ref) from error
    except HfHubHTTPError as error:
        raise _by_status(ref, error) from error
    except httpx2.TimeoutException as error:
        raise _timeout(access.timeout_s) from error
    except (httpx2.TransportError, OfflineModeIsEnabled) as error:
        raise _unavailable("hub_unreachable", "the Hugging Face Hub cannot be reached right "
                           "now") from error
    try:
        config = _with_quant_file(inline_config.read_config_bytes(body), quant)
    except inline_config.ConfigValueError as error:
        raise _refused(ref, "hub_bad_config", f"the config.json of {ref.repo_id} cannot be "
                       f"read: {error}", reason=str(error)) from error
    return HubModel(repo_id=repo_id, revision=ref.revision, commit_sha=commit, config=config,
                    fetched_at=now())


def _lists(info: bytes, filename: str) -> bool:
    """Whether a model-info answer's ``siblings`` (the repository's files at the commit) name
    ``filename``."""
    try:
        document = json.loads(info)
    except (ValueError, RecursionError):
        return False
    siblings = document.get("siblings") if isinstance(document, dict) else None
    return isinstance(siblings, list) and any(
        isinstance(entry, dict) and entry.get("rfilename") == filename for entry in siblings)


def _with_quant_file(config: dict[str, Any], quant: bytes | None) -> dict[str, Any]:
    """The config.json with the repository's ModelOpt ``hf_quant_config.json`` as its
    ``quantization_config`` when it has none (:func:`inline_config.with_hf_quant_config`, as
    vLLM reads such a release), summarised and held to the same size as any config.json."""
    if quant is None:
        return config
    try:
        document = inline_config.loads_bounded(quant)
    except (ValueError, RecursionError) as error:
        raise inline_config.ConfigValueError(
            "syntax", f"{HF_QUANT_CONFIG} is not valid JSON") from error
    inline_config.check_values(document)
    merged = inline_config.summarised(inline_config.with_hf_quant_config(config, document))
    inline_config.check_size(merged)
    return merged


def _commit_of(info: bytes, ref: RepoRef) -> tuple[str, str]:
    """The commit and the Hub's spelling of the id, from a model-info answer."""
    try:
        document = json.loads(info)
    except (ValueError, RecursionError):
        document = None
    sha = document.get("sha") if isinstance(document, dict) else None
    if not isinstance(sha, str) or _COMMIT.fullmatch(sha) is None:
        raise _unavailable("hub_unreachable", "the Hugging Face Hub's answer names no commit")
    assert isinstance(document, dict)
    spelled = document.get("id")
    same = isinstance(spelled, str) and spelled.lower() == ref.repo_id.lower()
    return sha, spelled if same and isinstance(spelled, str) else ref.repo_id


def _get(url: str, headers: Mapping[str, str], limit: int, deadline: float,
         access: HubAccess, ref: RepoRef,
         params: Mapping[str, str | list[str]] | None = None) -> bytes:
    """The body of a 2xx answer, at most ``limit`` bytes, by ``deadline``; an error answer is
    raised as huggingface_hub reads it (from its first :data:`MAX_ERROR_BYTES`). Redirects
    are followed here, at most :data:`MAX_REDIRECTS`, each target checked first
    (:func:`_redirect_target`); the token goes only to the endpoint's own origin."""
    sent = dict(headers)
    for _ in range(MAX_REDIRECTS + 1):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _timeout(access.timeout_s)
        with get_session().stream("GET", url, headers=sent, params=params,
                                  timeout=httpx2.Timeout(remaining),
                                  follow_redirects=False) as response:
            if response.has_redirect_location:
                url = _redirect_target(str(response.url), response.headers["location"],
                                       access, ref)
                params = None  # the target carries its own query
                if _origin(url) != _origin(access.endpoint):
                    sent = {k: v for k, v in sent.items() if k.lower() != "authorization"}
                continue
            return _body(response, limit, deadline, access, ref)
    raise _redirect_refused(ref, "too many redirects")


def _body(response: httpx2.Response, limit: int, deadline: float, access: HubAccess,
          ref: RepoRef) -> bytes:
    if response.status_code >= 400:
        head = _read(response, MAX_ERROR_BYTES, deadline, access, truncate=True)
        forwarded = {name: value for name, value in response.headers.items()
                     if name.lower() in _FORWARDED_ERROR_HEADERS}
        hf_raise_for_status(httpx2.Response(response.status_code, headers=forwarded,
                                            content=head, request=response.request))
    if response.headers.get("content-encoding", "identity").lower() not in ("identity", ""):
        raise _unavailable("hub_unreachable", "the Hugging Face Hub answered compressed "
                           "although asked not to")
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _too_large(ref, limit)
    return _read(response, limit, deadline, access, ref=ref)


def _origin(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError:  # a port that is not a number
        port = -1
    return scheme, (parts.hostname or "").lower(), port


def _redirect_target(current: str, location: str, access: HubAccess, ref: RepoRef) -> str:
    """Where a redirect leads, if it may be followed (a Hub or mirror
    redirecting to ``http://127.0.0.1:8198/`` had that internal answer fetched and shown):
    to the endpoint's own origin (scheme, host and port), or from the public Hub over https to
    its own hosts (:data:`HUB_HOST_SUFFIXES`). A host other than the endpoint's must resolve
    to public addresses only: never loopback, private, link-local (the cloud metadata address
    169.254.169.254), shared, reserved or multicast ones."""
    target = urljoin(current, location)
    scheme, host, port = _origin(target)
    if (scheme, host, port) == _origin(access.endpoint):
        return target
    public_hub = _origin(access.endpoint) == _origin(DEFAULT_HUB_ENDPOINT)
    if not (public_hub and scheme == "https" and host.endswith(HUB_HOST_SUFFIXES)):
        raise _redirect_refused(ref, host or "?")
    for address in _addresses(host, port):
        if not _public(address):
            raise _redirect_refused(ref, host)
    return target


def _addresses(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (none: refused, as unreachable)."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return ["0.0.0.0"]  # unresolvable: refused like an unspecified address
    return [str(info[4][0]).split("%")[0] for info in found] or ["0.0.0.0"]


def _public(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def _redirect_refused(ref: RepoRef, where: str) -> InvalidInput:
    return _refused(ref, "hub_redirect", f"the Hugging Face Hub sent the request for {ref.repo_id} "
                    f"on to {where}, which is not followed", host=where)


def _read(response: httpx2.Response, limit: int, deadline: float, access: HubAccess, *,
          truncate: bool = False, ref: RepoRef | None = None) -> bytes:
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_raw():
        if size + len(chunk) > limit:
            if truncate:
                chunks.append(chunk[: limit - size])
                break
            raise _too_large(ref, limit)
        size += len(chunk)
        chunks.append(chunk)
        if time.monotonic() > deadline:
            raise _timeout(access.timeout_s)
    return b"".join(chunks)


def _refused(ref: RepoRef, key: str, why: str, **params: str) -> InvalidInput:
    return InvalidInput(f"{why}; give its config.json instead", field="model", key=key,
                        params={"repo": ref.repo_id, **params})


def _not_found(ref: RepoRef) -> NotFound:
    return NotFound(f"the Hugging Face Hub has no public model {ref.repo_id} (or it is "
                    "private); check the id, or give its config.json instead", field="model",
                    key="hub_not_found", params={"repo": ref.repo_id})


def _too_large(ref: RepoRef | None, limit: int) -> DomainError:
    repo = ref.repo_id if ref is not None else "the repository"
    return InvalidInput(f"the Hugging Face Hub's answer for {repo} is larger than "
                        f"{limit // 1024} KB; give its config.json instead", field="model",
                        key="hub_too_large", params={"repo": repo, "max": limit // 1024})


def _busy() -> Unavailable:
    return _unavailable("hub_busy", "too many Hub look-ups at once; try again in a moment")


def _timeout(seconds: float) -> Unavailable:
    return _unavailable("hub_timeout", f"the Hugging Face Hub did not answer within "
                        f"{seconds:g} s", seconds=f"{seconds:g}")


def _unavailable(key: str, reason: str, **params: str) -> Unavailable:
    return Unavailable(f"{reason}; try again, or give the model's config.json instead",
                       field="model", key=key, params=params)


def _by_status(ref: RepoRef, error: HfHubHTTPError) -> DomainError:
    """An error answer huggingface_hub has no class for, by its status."""
    status = error.response.status_code if error.response is not None else 0
    if status in (401, 403):
        return _refused(ref, "hub_gated", f"{ref.repo_id} is gated and the shop's Hub token "
                        "has no access to it")
    if status == 404:
        return _not_found(ref)
    return _unavailable("hub_unreachable", f"the Hugging Face Hub answered {status}")
