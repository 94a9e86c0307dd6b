"""Settings: sensible defaults, and one clear line (exit 2) for every bad value."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.config import DEFAULT_DATABASE_URL, ConfigurationError, load_settings
from tests.cli.runner import Run, sizer


def test_defaults() -> None:
    settings = load_settings()
    assert settings.database_url == DEFAULT_DATABASE_URL
    assert settings.default_locale == "de"
    assert settings.supported_locales == ["de", "en"]
    assert settings.quote_url_template is None


def test_lists_accept_commas_or_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIZER_SUPPORTED_LOCALES", "en, de")
    monkeypatch.setenv("SIZER_DEFAULT_LOCALE", "en")
    monkeypatch.setenv("SIZER_FRAME_ANCESTORS", '["\'self\'", "https://shop.example"]')
    settings = load_settings()
    assert settings.supported_locales == ["en", "de"]
    assert settings.frame_ancestors == ["'self'", "https://shop.example"]


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("SIZER_DEFAULT_LOCALE", "fr", "SIZER_DEFAULT_LOCALE: 'fr' is not one of de, en"),
        ("SIZER_SUPPORTED_LOCALES", "de,EN", "SIZER_SUPPORTED_LOCALES: 'EN' is not"),
        ("SIZER_SUPPORTED_LOCALES", "[de", "SIZER_SUPPORTED_LOCALES: not a valid JSON list"),
        ("SIZER_DATABASE_URL", "not a url", "SIZER_DATABASE_URL: not a database URL"),
        ("SIZER_DATABASE_URL", "mysql://x/y", "SIZER_DATABASE_URL: unsupported database"),
        ("SIZER_SECRET_KEY", "short", "SIZER_SECRET_KEY: must be at least 16"),
        ("SIZER_QUOTE_URL_TEMPLATE", "shop/{sku}", "SIZER_QUOTE_URL_TEMPLATE: 'shop/{sku}'"),
        # a placeholder the storefront does not fill in used to pass start-up and then drop
        # the shop link from every quote page without a word (issue 14, point 5)
        ("SIZER_QUOTE_URL_TEMPLATE", "https://shop.example/q?sku={sku}&qty={qty}",
         "SIZER_QUOTE_URL_TEMPLATE: unknown placeholder {qty}"),
        ("SIZER_QUOTE_URL_TEMPLATE", "https://shop.example/q/{}",
         "SIZER_QUOTE_URL_TEMPLATE: unknown placeholder {}"),
        ("SIZER_QUOTE_URL_TEMPLATE", "https://shop.example/q/{sku.upper}",
         "SIZER_QUOTE_URL_TEMPLATE: unknown placeholder {sku.upper}"),
        ("SIZER_QUOTE_URL_TEMPLATE", "https://shop.example/q/{sku",
         "SIZER_QUOTE_URL_TEMPLATE: 'https://shop.example/q/{sku' is not a valid template"),
        ("SIZER_QUOTE_URL_TEMPLATE", "https://shop.example/q?n={sku:d}",
         "SIZER_QUOTE_URL_TEMPLATE: 'https://shop.example/q?n={sku:d}' cannot be filled in"),
        ("SIZER_METRICS_ALLOW_IPS", "127.0.0.1,prometheus",
         "SIZER_METRICS_ALLOW_IPS: 'prometheus' is not an IP address or network"),
        ("SIZER_METRICS_TOKEN", "short", "SIZER_METRICS_TOKEN: must be at least 16"),
        ("SIZER_PUBLIC_BASE_URL", "https://shop.example/sizer",
         "SIZER_PUBLIC_BASE_URL: 'https://shop.example/sizer' must name the origin only"),
    ],
)
def test_bad_values_name_the_setting(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, message: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigurationError) as caught:
        load_settings()
    assert str(caught.value).startswith(message)
    assert caught.value.setting == name
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "template",
    [
        "https://shop.example/quote?sku={sku}&qty={quantity}&ref={reference}",
        "https://shop.example/basket/{sku}?n={quantity:d}&literal={{braces}}",
        "https://shop.example/contact",
    ],
)
def test_a_quote_url_template_with_known_placeholders_is_kept(
    monkeypatch: pytest.MonkeyPatch, template: str
) -> None:
    monkeypatch.setenv("SIZER_QUOTE_URL_TEMPLATE", template)
    assert load_settings().quote_url_template == template


def _sizer(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *args: str, **env: str) -> Run:
    """``sizer ARGS`` run from ``tmp_path`` with these settings (in-process; the console script
    itself is run in tests/cli/test_end_to_end.py)."""
    monkeypatch.chdir(tmp_path)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return sizer(*args)


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (
            {"SIZER_DEFAULT_LOCALE": "fr"},
            "configuration error: SIZER_DEFAULT_LOCALE: 'fr' is not one of de, en",
        ),
        (
            {"SIZER_DATABASE_URL": "postgresql+psycopg://nobody@127.0.0.1:1/x"},
            "configuration error: SIZER_DATABASE_URL: cannot connect to "
            "postgresql+psycopg://nobody@127.0.0.1:1/x",
        ),
        (
            {"SIZER_SUPPORTED_LOCALES": "[broken"},
            "configuration error: SIZER_SUPPORTED_LOCALES: not a valid JSON list",
        ),
    ],
)
def test_cli_stops_with_one_line_and_exit_code_2(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, env: dict[str, str], expected: str
) -> None:
    result = _sizer(monkeypatch, tmp_path, "db", "current", **env)
    assert result.code == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(expected)
    assert "Traceback" not in result.stderr + result.stdout


def test_cli_upgrades_and_seeds_a_fresh_sqlite_database(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'nested' / 'sizer.db'}"

    def db(*args: str) -> Run:
        return _sizer(monkeypatch, tmp_path, "db", *args, SIZER_DATABASE_URL=url)

    seed_first = db("seed")  # something the user can fix: exit 2, one line naming the fix
    assert seed_first.code == 2 and seed_first.stdout == ""
    assert seed_first.stderr.count("\n") == 1
    assert seed_first.stderr.startswith("sizer db: error: database: at migration none, not ")
    assert seed_first.stderr.endswith("; run `sizer db upgrade` first\n")

    assert db("upgrade").code == 0
    assert "(head)" in db("current").stdout
    seeded = db("seed")
    assert seeded.code == 0, seeded.stderr
    assert "gpu_sku: 15 inserted" in seeded.stdout  # 8 sold, 7 comparison cards (issue 26)
    again = db("seed")
    assert again.code == 0 and "already up to date" in again.stdout


def test_default_database_lives_under_data_in_the_working_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    result = _sizer(monkeypatch, tmp_path, "db", "upgrade")
    assert result.code == 0, result.stderr
    assert (tmp_path / "data" / "sizer.db").is_file()


def test_the_default_database_file_is_the_one_its_url_names() -> None:
    """``sizer estimate`` asks whether the default SQLite file is there without SQLAlchemy's
    URL parser (app/cli/estimate.py); the file it asks for is the URL's."""
    from sqlalchemy.engine import make_url

    from app.config import DEFAULT_DATABASE_FILE
    from app.db.urls import sqlite_file

    assert sqlite_file(make_url(DEFAULT_DATABASE_URL)) == DEFAULT_DATABASE_FILE
