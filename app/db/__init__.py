"""Database plumbing: declarative base, tables, the UTC timestamp type, engines and sessions,
migrations and backups.

The domains (``app.catalog``, ``app.quotes``, ``app.accounts``) query through it. The HTTP
surfaces take only sessions, the outage check and the migration state from it (the request's
session dependency lives in ``app.http``); the CLI opens it through ``app.cli.database``, and
``sizer db`` also migrates and backs up. It imports no web framework and the engine never
imports it (import contracts in ``pyproject.toml``).
"""
