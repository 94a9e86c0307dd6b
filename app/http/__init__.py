"""Plumbing every HTTP surface shares (the pages, the staff desk, the partner API) and nothing
else needs: the request's database session. It lives here, not in :mod:`app.db`, so the
database layer imports no web framework and the CLI does not load FastAPI to open a database
(an import-linter contract holds ``app.db`` to that)."""
