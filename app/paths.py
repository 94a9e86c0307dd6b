"""Where the package's own files are: standard library only, so a command that reads the seed
files (``sizer estimate --offline``) does not pay for the settings' or the database's imports.

Everything the service reads at run time is package data inside app/ (pyproject.toml,
``[tool.setuptools.package-data]``), found relative to this file: the same in a checkout, an
editable install, an installed wheel and the image, whatever the working directory. Nothing at
run time reads tools/, docs/ or the checkout's root.
"""

from __future__ import annotations

from pathlib import Path

APP_DIR: Path = Path(__file__).resolve().parent
TEMPLATES_DIR: Path = APP_DIR / "templates"
STATIC_DIR: Path = APP_DIR / "static"
MIGRATIONS_DIR: Path = APP_DIR / "migrations"
LOCALES_DIR: Path = APP_DIR / "locales"
SEED_DIR: Path = APP_DIR / "catalog" / "seed"
