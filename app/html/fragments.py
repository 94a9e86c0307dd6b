"""Rendered htmx answers this process sent, kept per catalog snapshot.

The calculator's result fragment for a job is a function of the catalog snapshot, the job's
fields and the language: rendering it (the result table, every number formatted in the
customer's language) was most of its cost, about 7 ms against well under one for the rest of
the request. :class:`FragmentCache` keeps the bytes of the last
:data:`FRAGMENT_CACHE_SIZE` answers, held on the application's caches
(``app.state.caches.fragments``, docs/architecture.md rule 15) and keyed by the snapshot itself,
so a catalog edit (a new snapshot) starts afresh, exactly like the estimate answers.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass

from starlette.responses import Response

FRAGMENT_CACHE_SIZE = 256
"""Answers kept per worker, least recently used out first (each a few KB)."""


@dataclass(frozen=True, slots=True)
class Rendered:
    """What a response carried, to send again as a new response (a sent response object is
    never sent twice: middleware adds to its headers)."""

    body: bytes
    status_code: int
    headers: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, response: Response) -> Rendered:
        return cls(bytes(response.body), response.status_code,
                   tuple((k, v) for k, v in response.headers.items() if k != "content-length"))

    def response(self) -> Response:
        return Response(self.body, status_code=self.status_code, headers=dict(self.headers))


class FragmentCache:
    """Rendered answers by catalog snapshot and key (language, fields, ...). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: OrderedDict[tuple[int, Hashable], tuple[object, Rendered]] = OrderedDict()

    def get(self, snapshot: object, key: Hashable) -> Rendered | None:
        """What was rendered for ``key`` against this very snapshot, else None."""
        with self._lock:
            hit = self._kept.get((id(snapshot), key))
            if hit is None or hit[0] is not snapshot:
                return None
            self._kept.move_to_end((id(snapshot), key))
            return hit[1]

    def put(self, snapshot: object, key: Hashable, rendered: Rendered) -> None:
        with self._lock:
            if self._kept and next(reversed(self._kept.values()))[0] is not snapshot:
                self._kept.clear()  # a new snapshot: the old one's answers are never asked
            self._kept[(id(snapshot), key)] = (snapshot, rendered)
            while len(self._kept) > FRAGMENT_CACHE_SIZE:
                self._kept.popitem(last=False)

    def forget(self) -> None:
        with self._lock:
            self._kept.clear()
