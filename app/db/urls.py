"""What a database URL names, without opening it: SQLAlchemy's URL parser only (no ORM, no
engine), so a command can ask whether the SQLite file is there before paying for the rest."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.engine import URL, make_url


def sqlite_file(url: URL) -> Path | None:
    """The file a SQLite URL names; None for another database, memory or a ``file:`` URI."""
    database = url.database
    if url.get_backend_name() != "sqlite" or not database or database == ":memory:":
        return None
    if database.startswith("file:"):  # URI form; leave it to the user
        return None
    return Path(database)


def database_file_missing(database_url: str) -> bool:
    """A SQLite URL whose file does not exist yet: connecting would create it (and
    :func:`app.db.session.make_engine` its directory), which a command that only reads must
    not do."""
    path = sqlite_file(make_url(database_url))
    return path is not None and not path.exists()
