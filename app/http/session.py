"""The per-request session dependency.

docs/architecture.md rule 5: services never commit; the request's session dependency
commits once, after the endpoint returns and BEFORE the response is sent
(``Depends(get_session, scope="function")``), so a failed commit becomes a 500
instead of a 200 that lied.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from app.db.session import SessionFactory


def get_session(request: Request) -> Iterator[Session]:
    """One session per request, committed once before the response goes out."""
    factory: SessionFactory = request.app.state.session_factory
    with factory() as session:
        try:
            yield session
        except BaseException:
            session.rollback()
            raise
        session.commit()


DbSession = Annotated[Session, Depends(get_session, scope="function")]
"""Use as ``session: DbSession`` in a route signature."""
