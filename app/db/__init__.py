"""Database plumbing: metadata, tables, engines, sessions and migrations.

Only the domains (``app.catalog`` and later quotes/accounts) use this package;
the engine never does (import-linter contract).
"""
