"""`sizer serve`: uvicorn on the app factory.

Settings and the database are checked here, in the parent process, so a bad
configuration stops start-up with one line before uvicorn spawns workers
(which would each print a traceback). Workers build the app through the import
string ``app.main:create_app_from_env``, which is what lets --workers > 1 work.
"""

from __future__ import annotations

import argparse
from typing import Any

import uvicorn

from app.config import ROOT, exit_on_configuration_error, load_settings_or_exit
from app.db.session import check_database

APP_FACTORY = "app.main:create_app_from_env"


def _serve(args: argparse.Namespace) -> int:
    settings = load_settings_or_exit()
    with exit_on_configuration_error():
        check_database(settings.database_url)
    uvicorn.run(
        APP_FACTORY,
        factory=True,
        host=args.host,
        port=args.port,
        workers=None if args.reload else args.workers,
        reload=args.reload,
        reload_dirs=_reload_dirs() if args.reload else None,
        proxy_headers=True,
    )
    return 0


def _reload_dirs() -> list[str]:
    return [str(path) for path in (ROOT / "app", ROOT / "templates") if path.is_dir()]


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Add the `serve` command to the `sizer` parser."""
    serve = subparsers.add_parser("serve", help="run the web service (uvicorn)")
    serve.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    serve.add_argument("--workers", type=_positive, default=1, help="worker processes")
    serve.add_argument("--reload", action="store_true", help="restart on code changes (dev)")
    serve.set_defaults(func=_serve)
