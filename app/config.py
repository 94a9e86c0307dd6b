"""Settings from the environment (prefix ``SIZER_``) and the package's fixed paths.

Why this module is shaped the way it is:

* Nothing happens at import time: reading the environment, creating the data
  directory or touching the database all wait until somebody asks, so tests and
  ``create_app(settings)`` can build as many independent apps as they like.
* A bad setting must stop start-up with ONE line that names the variable, never a
  traceback; :func:`load_settings_or_exit` and :func:`exit_on_configuration_error`
  give every entry point (``sizer serve``, ``sizer db ...``, the ASGI factory) the
  same behaviour.
"""

from __future__ import annotations

import ipaddress
import os
import re
import string
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, ValidationError, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict, SettingsError

from app import paths

ENV_PREFIX = "SIZER_"

# The package's own files (app/paths.py, standard library only), named here too for the modules
# that read the settings anyway.
APP_DIR: Path = paths.APP_DIR
TEMPLATES_DIR: Path = paths.TEMPLATES_DIR
STATIC_DIR: Path = paths.STATIC_DIR
MIGRATIONS_DIR: Path = paths.MIGRATIONS_DIR
LOCALES_DIR: Path = paths.LOCALES_DIR
SEED_DIR: Path = paths.SEED_DIR

DEFAULT_DATABASE_URL = "sqlite:///./data/sizer.db"
"""Relative to the working directory, as ``make run`` starts from the checkout."""
DEFAULT_DATABASE_FILE = Path("data/sizer.db")
"""The file :data:`DEFAULT_DATABASE_URL` names (``app.db.urls.sqlite_file`` of it, which
tests/test_config.py holds it to), for asking whether it is there without SQLAlchemy's URL
parser: ``sizer estimate`` in a fresh checkout answers from the seed files without importing
SQLAlchemy."""

DEFAULT_HUB_ENDPOINT = "https://huggingface.co"
"""Where Hub repository ids are looked up unless SIZER_HUB_ENDPOINT or HF_ENDPOINT say."""

INSECURE_DEV_SECRET = "dev-insecure-secret-change-me"
"""Good enough for a laptop; production sets SIZER_SECRET_KEY (docs/configuration.md)."""

_LOCALE_RE = re.compile(r"^[a-z]{2}$")
_COUNTRY_RE = re.compile(r"^[A-Z]{2}$")

QUOTE_URL_FIELDS = {"sku": "rtx-pro-6000", "quantity": 1, "reference": "Q-8KYNFKWV"}
"""The placeholders SIZER_QUOTE_URL_TEMPLATE may use, each with a value of the type the
storefront fills in (``app/web/quotes.py``: the item's slug, the quantity asked for, the quote
request's reference), so start-up can try the template once and refuse what would fail later."""

DEFAULT_VAT_RATES: dict[str, Decimal] = {
    code: Decimal(rate) for code, rate in (
        ("AT", "20"), ("BE", "21"), ("BG", "20"), ("HR", "25"), ("CY", "19"), ("CZ", "21"),
        ("DK", "25"), ("EE", "24"), ("FI", "25.5"), ("FR", "20"), ("DE", "19"), ("GR", "24"),
        ("HU", "27"), ("IE", "23"), ("IT", "22"), ("LV", "21"), ("LT", "21"), ("LU", "17"),
        ("MT", "18"), ("NL", "21"), ("PL", "23"), ("PT", "23"), ("RO", "21"), ("SK", "23"),
        ("SI", "22"), ("ES", "21"), ("SE", "25"),
    )
}
"""Standard VAT rates of the 27 EU member states (percent, as of late 2025). Countries not
listed (CH, GB, NO, ...) are exports at 0 %. Override with SIZER_VAT_RATES."""


def _parse_rates(value: Any) -> Any:
    """``DE=19,AT=20`` or a JSON object ``{"DE": 19}`` into {country: Decimal}."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("{"):
            import json

            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"not a valid JSON object ({exc.msg})") from exc
        else:
            pairs: dict[str, Any] = {}
            for part in (p for p in re.split(r"[,\s]+", text) if p):
                code, sep, rate = part.partition("=")
                if not sep:
                    raise ValueError(f"{part!r} is not COUNTRY=RATE")
                pairs[code] = rate
            value = pairs
    if isinstance(value, dict):
        rates: dict[str, Decimal] = {}
        for code, rate in value.items():
            country = str(code).strip().upper()
            if not _COUNTRY_RE.match(country):
                raise ValueError(f"{code!r} is not a two-letter country code")
            try:
                number = Decimal(str(rate).strip())
            except ArithmeticError as exc:
                raise ValueError(f"{country}: {rate!r} is not a number") from exc
            if not number.is_finite() or not Decimal(0) <= number <= Decimal(100):
                raise ValueError(f"{country}: {rate!r} must be from 0 to 100")
            rates[country] = number
        return rates
    return value


DEFAULT_PUBLIC_BASE_URL = "http://127.0.0.1:8000"
"""Absolute links when SIZER_PUBLIC_BASE_URL is unset: where `make run` and `sizer serve` listen
by default (`sizer serve` sets the setting to its own address on loopback, and refuses to
serve anywhere else without it)."""

LOOPBACK_NETWORKS = ("127.0.0.0/8", "::1/128")
"""IPv4's loopback block (RFC 1122) and IPv6's loopback address (RFC 4291): this computer."""


def _origin(value: str) -> str:
    """``scheme://host[:port]`` of an http(s) URL with nothing else, or a ValueError saying why.

    The pages link to their own root paths (``/q/...``, ``/static/...``), so the service is
    always served at the root of this origin; a path here would only be dropped."""
    if not value.isascii() or not value.isprintable() or " " in value:
        raise ValueError(f"{value!r} must be plain ASCII without spaces (an IDN host in its "
                         "xn-- form)")
    parts = urlsplit(value)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise ValueError(f"{value!r} must be an https:// or http:// URL with a host")
    if parts.username is not None or parts.password is not None:
        raise ValueError(f"{value!r} must not carry a user name or password")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError(f"{value!r} must name the origin only (https://host[:port]); "
                         "the service answers at its root")
    try:
        parts.port  # noqa: B018 -- parsing the port raises on a bad one
    except ValueError as exc:
        raise ValueError(f"{value!r} has an invalid port") from exc
    return f"{parts.scheme}://{parts.netloc.lower()}"


def _check_placeholders(template: str) -> None:
    """Refuse a quote URL template that could not be filled in: a placeholder other than
    :data:`QUOTE_URL_FIELDS`, a positional ``{}``, an unbalanced brace or a format the value
    cannot take. Checked at start-up, so a typo (``{qty}``) stops the service with the setting's
    name instead of every quote page silently losing its shop link."""
    try:
        fields = [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
    except ValueError as exc:
        raise ValueError(f"{template!r} is not a valid template ({exc})") from exc
    for name in fields:
        if name not in QUOTE_URL_FIELDS:
            known = ", ".join(f"{{{field}}}" for field in QUOTE_URL_FIELDS)
            raise ValueError(f"unknown placeholder {{{name}}} in {template!r}; use {known}")
    try:
        template.format(**QUOTE_URL_FIELDS)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{template!r} cannot be filled in ({exc})") from exc


class ConfigurationError(Exception):
    """A setting is unusable; carries the environment variable it came from.

    Raised by settings loading and by start-up checks (e.g. an unreachable
    database) so every entry point can print the same one-line message.
    """

    def __init__(self, setting: str, problem: str) -> None:
        super().__init__(f"{setting}: {problem}")
        self.setting = setting
        self.problem = problem


def _split_list(value: Any) -> Any:
    """Accept ``de,en``, ``de en`` or a JSON list for list settings.

    A comma list is what people type into a .env file or a container
    orchestrator; JSON stays accepted for tools that generate it.
    """
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            import json

            try:
                return json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"not a valid JSON list ({exc.msg})") from exc
        return [part for part in re.split(r"[,\s]+", text) if part]
    return value


class Settings(BaseSettings):
    """Every knob the service has; each maps to ``SIZER_<NAME>``.

    Frozen so a running app cannot drift from what it validated at start-up.
    """

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        extra="ignore",
        frozen=True,
        validate_default=True,
    )

    database_url: str = Field(
        default=DEFAULT_DATABASE_URL,
        description="SQLAlchemy URL; SQLite file by default, postgresql+psycopg:// in production.",
    )
    secret_key: SecretStr = Field(
        default=SecretStr(INSECURE_DEV_SECRET),
        description="Keys the hashes of rate-limit identifiers in Redis; set a long random value "
        "of your own in production (`sizer serve` refuses the default beyond loopback).",
    )
    frame_ancestors: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["'self'"],
        description="CSP frame-ancestors sources allowed to embed the calculator.",
    )
    quote_url_template: str | None = Field(
        default=None,
        description="Shop URL a 'request a quote' button opens, e.g. https://shop/quote?sku={sku}.",
    )
    public_base_url: str | None = Field(
        default=None,
        description="Where customers reach the service (https://sizer.shop.example): the only "
        "source of absolute links (API quote_url, permalinks), never a request's Host header. "
        "`sizer serve` requires it beyond loopback; on loopback it serves its own address.",
    )
    metrics_allow_ips: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: list(LOOPBACK_NETWORKS),
        description="Addresses or networks that may read /metrics and /readyz's migration ids "
        "(comma list); loopback by default, empty for SIZER_METRICS_TOKEN only.",
    )
    metrics_token: SecretStr | None = Field(
        default=None,
        description="Bearer token (16+ characters) that reads /metrics and /readyz's migration "
        "ids from any address.",
    )
    supported_locales: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["de", "en"],
        description="Locales the pages are offered in.",
    )
    default_locale: str = Field(default="de", description="Locale when the browser asks none.")
    vat_rates: Annotated[dict[str, Decimal], NoDecode] = Field(
        default_factory=lambda: dict(DEFAULT_VAT_RATES),
        description="VAT percent by customer country (DE=19,AT=20,... or JSON); others 0.",
    )
    vat_home_country: str = Field(
        default="DE", description="The shop's own country (always charged its own rate)."
    )
    seller_company: str | None = Field(default=None, max_length=200,
                                description="The seller's legal name on /q/ and the print view.")
    seller_address: str | None = Field(default=None, max_length=400,
                                description="The seller's postal address (one line).")
    seller_register: str | None = Field(default=None, max_length=200,
                                 description="Commercial register and number.")
    seller_vat_id: str | None = Field(default=None, max_length=40,
                                      description="The seller's VAT ID.")
    seller_terms_url: str | None = Field(default=None, max_length=400,
                                  description="Link to the general terms and conditions.")
    seller_imprint_url: str | None = Field(default=None, max_length=400,
                                    description="Link to the imprint (Impressum).")
    contact_name: str | None = Field(default=None, max_length=200,
                              description="The named contact a customer's quote shows.")
    contact_email: str | None = Field(default=None, max_length=254,
                                      description="That contact's e-mail.")
    contact_phone: str | None = Field(default=None, max_length=60,
                                      description="That contact's phone.")
    staff_session_hours: int = Field(
        default=12, ge=1, le=24 * 30, description="How long a staff sign-in lasts."
    )
    forwarded_allow_ips: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Addresses or networks of the proxies whose X-Forwarded-For/-Proto "
        "`sizer serve` believes (comma list); none by default, so the client address is the "
        "TCP peer's and no client can name its own.",
    )
    api_rate_limit_per_minute: int = Field(
        default=120, ge=1, le=1_000_000,
        description="Partner API requests per key and minute, unless the key sets its own.",
    )
    quote_rate_limit_per_hour: int = Field(
        default=10, ge=1, le=100_000,
        description="Storefront quote requests (POST /quote) stored per client address (IPv6: "
        "per /64) and clock hour; more are refused with 429 and Retry-After.",
    )
    redis_url: str | None = Field(
        default=None,
        description="redis:// URL: rate limits and sign-in throttling shared by all workers "
        "(in-process per worker when unset).",
    )
    hub_endpoint: str | None = Field(
        default=None,
        description="The Hugging Face Hub that repository ids are fetched from (an origin, "
        "e.g. a mirror); unset: the HF_ENDPOINT variable, else https://huggingface.co.",
    )
    hub_token: SecretStr | None = Field(
        default=None,
        description="Hub access token (read scope) sent with every Hub request, for the gated "
        "repositories the shop has accepted; unset: none is sent (never one from the machine's "
        "Hugging Face login).",
    )
    hub_timeout_s: float = Field(
        default=10.0, ge=0.5, le=60,
        description="Longest one Hub look-up (model info and config.json together) may take.",
    )
    hub_lookups_per_minute: int = Field(
        default=10, ge=1, le=100_000,
        description="Hugging Face look-ups per client address (IPv6: per /64) and minute that "
        "the storefront sends on to the Hub (kept ones are free); more are refused with 429 "
        "and Retry-After.",
    )
    hub_cache_hours: int = Field(
        default=24, ge=1, le=24 * 365,
        description="How long a fetched config.json of a branch or tag is used before it is "
        "fetched again (one of a commit id is kept for good).",
    )
    redis_key_prefix: str = Field(
        default="gpusizer:", min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$",
        description="Prefix of every Redis key, so several deployments can share one Redis.",
    )

    @field_validator("database_url")
    @classmethod
    def _check_database_url(cls, value: str) -> str:
        if value == DEFAULT_DATABASE_URL:  # a SQLite file: SQLAlchemy only for another URL
            return value
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError

        try:
            url = make_url(value)
        except ArgumentError as exc:
            raise ValueError(f"not a database URL ({exc})") from exc
        if url.get_backend_name() not in {"sqlite", "postgresql"}:
            raise ValueError(
                f"unsupported database {url.get_backend_name()!r}; use sqlite or postgresql"
            )
        return value

    @field_validator("secret_key")
    @classmethod
    def _check_secret(cls, value: SecretStr) -> SecretStr:
        if len(value.get_secret_value()) < 16:
            raise ValueError("must be at least 16 characters")
        return value

    @field_validator("frame_ancestors", "metrics_allow_ips", "forwarded_allow_ips", mode="before")
    @classmethod
    def _split_lists(cls, value: Any) -> Any:
        return _split_list(value)

    @field_validator("metrics_allow_ips", "forwarded_allow_ips")
    @classmethod
    def _check_networks(cls, value: list[str]) -> list[str]:
        # Normalised to networks, which uvicorn (forwarded_allow_ips) parses as we do; '*' is
        # no address, so uvicorn's "trust everybody" cannot be asked for.
        networks: list[str] = []
        for entry in value:
            try:  # an address is its own /32 or /128 network
                networks.append(str(ipaddress.ip_network(entry, strict=False)))
            except ValueError as exc:
                raise ValueError(f"{entry!r} is not an IP address or network") from exc
        return list(dict.fromkeys(networks))

    @field_validator("metrics_token")
    @classmethod
    def _check_metrics_token(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None or not value.get_secret_value():
            return None
        if len(value.get_secret_value()) < 16:
            raise ValueError("must be at least 16 characters")
        return value

    @field_validator("public_base_url")
    @classmethod
    def _check_public_base_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        return _origin(value.strip())

    @property
    def public_origin(self) -> str:
        """The origin every absolute link starts with: SIZER_PUBLIC_BASE_URL, or (only ever on
        loopback, as `sizer serve` refuses anything else without it) the default address."""
        return self.public_base_url or DEFAULT_PUBLIC_BASE_URL

    def absolute_url(self, path: str) -> str:
        """``path`` (``/q/<token>``) as a link for outside this page: API answers, e-mails,
        permalinks. Built from the setting alone, so a forged Host header never shows up."""
        return self.public_origin + path

    @field_validator("quote_url_template")
    @classmethod
    def _check_quote_url(cls, value: str | None) -> str | None:
        if value is None or value == "":
            return None
        if not value.startswith(("https://", "http://")):
            raise ValueError(f"{value!r} must start with https:// or http://")
        _check_placeholders(value)
        return value

    @field_validator("hub_endpoint")
    @classmethod
    def _check_hub_endpoint(cls, value: str | None) -> str:
        """The setting, else ``HF_ENDPOINT`` (huggingface_hub's own variable), else the Hub;
        an origin with a scheme, without the trailing slash."""
        chosen = (value or "").strip() or os.environ.get("HF_ENDPOINT", "").strip()
        if not chosen:
            return DEFAULT_HUB_ENDPOINT
        if not chosen.startswith(("https://", "http://")):
            raise ValueError(f"{chosen!r} must start with https:// or http://")
        return chosen.rstrip("/")

    @field_validator("hub_token")
    @classmethod
    def _check_hub_token(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None or not value.get_secret_value().strip():
            return None
        return SecretStr(value.get_secret_value().strip())

    @field_validator("redis_url")
    @classmethod
    def _check_redis_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        from redis import ConnectionPool  # only when a URL is set

        try:
            ConnectionPool.from_url(value.strip())  # parses; connects nobody
        except ValueError as exc:
            raise ValueError(str(exc)) from exc
        return value.strip()

    @field_validator("vat_rates", mode="before")
    @classmethod
    def _split_vat_rates(cls, value: Any) -> Any:
        return _parse_rates(value)

    @field_validator("vat_home_country")
    @classmethod
    def _check_home_country(cls, value: str) -> str:
        value = value.strip().upper()
        if not _COUNTRY_RE.match(value):
            raise ValueError(f"{value!r} is not a two-letter country code")
        return value

    @field_validator("supported_locales", mode="before")
    @classmethod
    def _split_locales(cls, value: Any) -> Any:
        return _split_list(value)

    @field_validator("supported_locales")
    @classmethod
    def _check_locales(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("must name at least one locale")
        for locale in value:
            if not _LOCALE_RE.match(locale):
                raise ValueError(f"{locale!r} is not a two-letter lower-case language code")
        return list(dict.fromkeys(value))

    @field_validator("default_locale")
    @classmethod
    def _check_default_locale(cls, value: str, info: ValidationInfo) -> str:
        # supported_locales is declared first, so it is validated already (or
        # missing from info.data because it failed; then it reports itself).
        supported = info.data.get("supported_locales")
        if supported is not None and value not in supported:
            raise ValueError(f"{value!r} is not one of {', '.join(supported)}")
        return value


def _setting_name(field: str) -> str:
    return f"{ENV_PREFIX}{field.upper()}"


def _describe_validation_error(exc: ValidationError) -> ConfigurationError:
    """Turn pydantic's multi-line report into one line per the start-up rule."""
    parts: list[tuple[str, str]] = []
    for error in exc.errors(include_url=False):
        field = str(error["loc"][0]) if error["loc"] else "settings"
        message = str(error["msg"]).removeprefix("Value error, ")
        if error["type"] != "value_error" and "input" in error:
            message = f"{message} (got {error['input']!r})"
        parts.append((_setting_name(field), message))
    (setting, problem), rest = parts[0], parts[1:]
    problem = "; ".join([problem, *(f"{name}: {msg}" for name, msg in rest)])
    return ConfigurationError(setting, problem)


def load_settings(**overrides: Any) -> Settings:
    """Read and validate the settings, raising :class:`ConfigurationError`.

    ``overrides`` are field values that win over the environment (tests, tools).
    """
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        raise _describe_validation_error(exc) from exc
    except SettingsError as exc:
        # Raised by pydantic-settings itself, e.g. undecodable complex values.
        match = re.search(r'field "([a-z_]+)"', str(exc))
        setting = _setting_name(match.group(1)) if match else "settings"
        raise ConfigurationError(setting, str(exc)) from exc


def report_configuration_error(error: ConfigurationError) -> None:
    """Print the one line every entry point uses for a bad setting."""
    print(f"configuration error: {error}", file=sys.stderr)


@contextmanager
def exit_on_configuration_error() -> Iterator[None]:
    """Turn a :class:`ConfigurationError` inside the block into exit code 2 and one line."""
    try:
        yield
    except ConfigurationError as error:
        report_configuration_error(error)
        raise SystemExit(2) from None


def load_settings_or_exit() -> Settings:
    """Validated settings, or one ``configuration error: SIZER_X: ...`` line and exit 2. Read
    from the environment at each call, never kept: an entry point reads them once and hands
    them on (``create_app(settings)``), so no process-wide copy needs clearing."""
    try:
        return load_settings()
    except ConfigurationError as error:
        report_configuration_error(error)
        raise SystemExit(2) from None
