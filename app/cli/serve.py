"""`sizer serve`: uvicorn on the app factory.

Settings and the database are checked here, in the parent process, so a bad
configuration stops start-up with one line before uvicorn spawns workers
(which would each print a traceback). Workers build the app through the import
string ``app.main:create_app_from_env``, which is what lets --workers > 1 work.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import tempfile

import uvicorn

from app.cli.database import ready_settings
from app.config import (
    APP_DIR,
    INSECURE_DEV_SECRET,
    ConfigurationError,
    Settings,
    exit_on_configuration_error,
    load_settings_or_exit,
)
from app.ops import logs
from app.ops.metrics import MULTIPROC_ENV

APP_FACTORY = "app.main:create_app_from_env"
# On SIGTERM uvicorn stops accepting, lets requests in flight finish for up to this long,
# then runs the lifespan shutdown (engine disposed). Docker's default stop timeout is 10 s.
GRACEFUL_SHUTDOWN_S = 8


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_secret(settings: Settings, host: str) -> None:
    """Secrets come from the environment: the built-in development secret is refused as soon
    as anyone but this computer could reach the service."""
    if not _is_loopback(host) and settings.secret_key.get_secret_value() == INSECURE_DEV_SECRET:
        raise ConfigurationError(
            "SIZER_SECRET_KEY",
            f"set a long random value of your own before serving on {host} "
            "(the built-in development value is only for 127.0.0.1)",
        )


PUBLIC_BASE_URL_ENV = "SIZER_PUBLIC_BASE_URL"


def check_public_base_url(settings: Settings, host: str, port: int) -> None:
    """Absolute links come from SIZER_PUBLIC_BASE_URL alone, never from a request's Host header
    (which any client can forge): required beyond loopback. On loopback, unset, it becomes this
    server's own address (for the workers too), so the links a developer follows lead here."""
    if settings.public_base_url is not None:
        return
    if not _is_loopback(host):
        raise ConfigurationError(
            PUBLIC_BASE_URL_ENV,
            f"set the address customers reach the service at (e.g. https://sizer.shop.example) "
            f"before serving on {host}: links in the API and on the pages are built from it",
        )
    os.environ[PUBLIC_BASE_URL_ENV] = f"http://{f'[{host}]' if ':' in host else host}:{port}"


def _serve(args: argparse.Namespace) -> int:
    settings = load_settings_or_exit()
    with exit_on_configuration_error():
        check_secret(settings, args.host)
        check_public_base_url(settings, args.host, args.port)
    ready_settings()  # and the database reachable, with the same one line and exit 2
    logs.configure()
    if args.workers > 1 and not os.environ.get(MULTIPROC_ENV):
        # Every worker writes its metric samples here; /metrics adds them up.
        os.environ[MULTIPROC_ENV] = tempfile.mkdtemp(prefix="sizer-metrics-")
    uvicorn.run(
        APP_FACTORY,
        factory=True,
        host=args.host,
        port=args.port,
        workers=None if args.reload else args.workers,
        reload=args.reload,
        reload_dirs=_reload_dirs() if args.reload else None,
        # Templates are read once per process (app/html/templating.py); --reload restarts on them.
        reload_includes=["*.py", "*.html", "*.svg", "*.css", "*.po"] if args.reload else None,
        # X-Forwarded-For/-Proto only from the proxies the operator named: uvicorn's own
        # default trusts loopback, which lets any client connecting over loopback (a local
        # proxy, a sidecar) name its own address and get fresh sign-in attempts.
        proxy_headers=bool(settings.forwarded_allow_ips),
        forwarded_allow_ips=list(settings.forwarded_allow_ips),
        log_config=None,  # keep our JSON logging (app/ops/logs.py)
        access_log=False,  # the request middleware logs each request once, with its id
        server_header=False,  # no "server: uvicorn" banner
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
    )
    return 0


def _reload_dirs() -> list[str]:
    return [str(APP_DIR)]


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def add_arguments(serve: argparse.ArgumentParser) -> None:
    """The `serve` command's options."""
    serve.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    serve.add_argument("--workers", type=_positive, default=1, help="worker processes")
    serve.add_argument("--reload", action="store_true", help="restart on code changes (dev)")
    serve.set_defaults(func=_serve)
