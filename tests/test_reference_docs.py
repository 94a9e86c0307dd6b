"""The user documents (README.md and docs/*.md) stay matched to the code, as the OpenAPI
snapshot keeps the API's contract matched (issue 14, point 5).

Each check reads the code's own list (the ``Settings`` fields, the ``sizer estimate`` parser)
rather than a copy of it, so a new setting or option fails here until it is documented, and a
documented one that goes fails until its row goes. Links between the documents are checked too:
the README was split into docs/ and a link to a section that moved must not dangle.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import pytest

from app.cli import estimate as estimate_command
from app.cli import serving as serving_command
from app.config import ENV_PREFIX, Settings
from app.estimates.serving import MEASUREMENTS_DIR
from tests.test_docs import DOCUMENTED_PATH

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
CONFIGURATION = DOCS / "configuration.md"
CLI = DOCS / "cli.md"

README_MAX_WORDS = 5 * 238
"""The README holds what a newcomer needs (what it is, `make run` / `make test`, one example per
use, what is where, where to read more) and links to docs/ for the reference: what a newcomer
reads in five minutes, at 238 words a minute (the average silent reading rate for non-fiction,
Brysbaert 2019, "How many words do we read per minute?", J. Memory and Language 109). Words of
prose, outside the command blocks, which a reader skims."""
CODE_BLOCK = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)

TABLE_ROW = re.compile(r"^\|(.+)\|\s*$", re.MULTILINE)
SETTING_IN_FIRST_CELL = re.compile(r"^\s*`(" + re.escape(ENV_PREFIX) + r"[A-Z0-9_]+)`\s*$")
OPTION = re.compile(r"--[a-z][a-z-]*")
LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} (.+)$", re.MULTILINE)


def _cells(text: str) -> list[list[str]]:
    return [[cell.strip() for cell in row.split("|")] for row in TABLE_ROW.findall(text)]


def documented_settings(text: str) -> list[str]:
    """The variables in the first column of the configuration table."""
    return [match.group(1) for cells in _cells(text)
            for match in [SETTING_IN_FIRST_CELL.match(cells[0])] if match is not None]


def settings_variables() -> set[str]:
    return {f"{ENV_PREFIX}{name.upper()}" for name in Settings.model_fields}


def test_every_setting_is_in_the_configuration_table() -> None:
    documented = documented_settings(CONFIGURATION.read_text(encoding="utf-8"))
    missing = sorted(settings_variables() - set(documented))
    assert not missing, f"add a row to docs/configuration.md for {', '.join(missing)}"


def test_every_variable_in_the_configuration_table_is_a_setting() -> None:
    documented = documented_settings(CONFIGURATION.read_text(encoding="utf-8"))
    unknown = sorted(set(documented) - settings_variables())
    assert not unknown, f"docs/configuration.md documents no such setting: {', '.join(unknown)}"
    assert len(documented) == len(set(documented)), "a setting has two rows"


def test_the_configuration_table_is_read_as_written() -> None:
    """The check itself: a row is found by its first cell, other tables' rows are not."""
    text = ("| variable | default | meaning |\n|---|---|---|\n"
            "| `SIZER_A_B` | `1` | a |\n| `--method` | `full` |\n| see `SIZER_A_B` | x |\n")
    assert documented_settings(text) == ["SIZER_A_B"]


def documented_defaults(text: str) -> dict[str, str]:
    """Each variable of the configuration table with its default cell (the second column)."""
    return {match.group(1): cells[1] for cells in _cells(text)
            for match in [SETTING_IN_FIRST_CELL.match(cells[0])] if match is not None}


def test_every_plain_default_in_the_configuration_table_is_the_code_s() -> None:
    """A number or a word the code defaults to is written in the table as it is in the code
    (list, secret and computed defaults are described in words and not compared)."""
    defaults = documented_defaults(CONFIGURATION.read_text(encoding="utf-8"))
    wrong = [f"{variable}: code {field.default!r}, table {defaults[variable]!r}"
             for name, field in Settings.model_fields.items()
             for variable in [f"{ENV_PREFIX}{name.upper()}"]
             if isinstance(field.default, int | str) and variable in defaults
             and f"`{field.default}`" not in defaults[variable]]
    assert not wrong, "docs/configuration.md:\n" + "\n".join(wrong)


def _options(command: Any) -> list[argparse.Action]:
    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    return [action for action in parser._actions  # argparse lists them nowhere public
            if action.option_strings and not isinstance(action, argparse._HelpAction)]


def option_rows(text: str) -> dict[str, str]:
    """Each option named in a table's first cell, with its whole row."""
    return {option: " | ".join(cells) for cells in _cells(text)
            for option in OPTION.findall(cells[0])}


def command_section(text: str, command: str) -> str:
    """The part of docs/cli.md under the heading ``## `sizer COMMAND` ``, up to the next one."""
    start = text.index(f"## `sizer {command}`")
    end = text.find("\n## ", start + 1)
    return text[start:] if end == -1 else text[start:end]


@pytest.mark.parametrize(("name", "command"), [("estimate", estimate_command),
                                               ("serving", serving_command)])
def test_every_option_and_value_is_in_the_commands_cli_table(name: str, command: Any) -> None:
    """``--attention sdpa`` was accepted and undocumented; every choice is now checked, for
    each command in its own section."""
    rows = option_rows(command_section(CLI.read_text(encoding="utf-8"), name))
    problems: list[str] = []
    options = _options(command)
    for action in options:
        option = max(action.option_strings, key=len)
        row = rows.get(option)
        if row is None:
            problems.append(f"{option} has no row")
            continue
        problems += [f"{option}: value {choice!r} missing" for choice in action.choices or ()
                     if f"`{choice}`" not in row]
    documented = set(rows) - {max(a.option_strings, key=len) for a in options}
    problems += [f"{option} is documented but sizer {name} has no such option"
                 for option in sorted(documented)]
    assert not problems, "docs/cli.md:\n" + "\n".join(problems)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def user_documents() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def broken_links(path: Path) -> list[str]:
    """Relative links in ``path`` whose file, or whose heading anchor, does not exist."""
    broken: list[str] = []
    text = path.read_text(encoding="utf-8")
    for target in LINK.findall(text):
        if re.match(r"^[a-z]+:", target):  # https:, mailto: and the like
            continue
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists():
            broken.append(f"{path.name}: {target} (no such file)")
        elif anchor and linked.suffix == ".md":
            anchors = {_slug(h) for h in HEADING.findall(linked.read_text(encoding="utf-8"))}
            if anchor not in anchors:
                broken.append(f"{path.name}: {target} (no such heading)")
    return broken


def test_links_between_the_documents_resolve() -> None:
    broken = [problem for path in user_documents() for problem in broken_links(path)]
    assert not broken, "\n".join(broken)


def test_a_link_to_a_missing_heading_is_caught(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\n\n## Behind a TLS proxy\n", encoding="utf-8")
    page = tmp_path / "b.md"
    page.write_text("[ok](a.md#behind-a-tls-proxy) [gone](a.md#docker) [no](c.md)",
                    encoding="utf-8")
    assert broken_links(page) == ["b.md: a.md#docker (no such heading)",
                                  "b.md: c.md (no such file)"]


def test_every_path_the_documents_name_exists() -> None:
    missing = sorted({f"{path.name}: {named}" for path in user_documents()
                      for named in DOCUMENTED_PATH.findall(path.read_text(encoding="utf-8"))
                      if not (ROOT / named).exists()})
    assert not missing, "named in the documents but gone:\n" + "\n".join(missing)


def test_the_readme_links_every_user_document() -> None:
    readme = README.read_text(encoding="utf-8")
    unlinked = [p.name for p in sorted(DOCS.glob("*.md")) if f"(docs/{p.name})" not in readme]
    assert not unlinked, f"link from the README's 'Read more': {', '.join(unlinked)}"


def prose_words(markdown: str) -> int:
    """The words a reader reads: everything but the fenced command blocks."""
    return len(CODE_BLOCK.sub("", markdown).split())


def test_the_readme_stays_an_introduction() -> None:
    words = prose_words(README.read_text(encoding="utf-8"))
    assert words <= README_MAX_WORDS, (
        f"README.md has {words} words of prose; move reference material into docs/ and link it")


def test_prose_words_leave_out_command_blocks() -> None:
    assert prose_words("Run it:\n\n```sh\nmake run --now\n```\n\nthen read.\n") == 4


README_FIGURES: tuple[tuple[str, str], ...] = (
    (r"held to (\d+) real vLLM\s+start-up logs", "vllm_logs.json"),
    (r"(\d+) published decode measurements", "decode_measurements.json"),
)
"""Counts the README states, each with the document in app/estimates/measurements/ whose cases
it counts: a measurement added or dropped fails here until the sentence says so."""


@pytest.mark.parametrize(("pattern", "document"), README_FIGURES)
def test_the_readmes_counts_are_the_datas(pattern: str, document: str) -> None:
    found = re.search(pattern, README.read_text(encoding="utf-8"))
    assert found is not None, f"the README no longer says {pattern!r}: update README_FIGURES"
    cases = json.loads((MEASUREMENTS_DIR / document).read_text(encoding="utf-8"))["cases"]
    assert int(found.group(1)) == len(cases)


def _seed_models() -> int:
    from tests.engine.reference import seed_model_index

    return len(seed_model_index())


def _h200_steps() -> int:
    steps = ROOT / "tests" / "fixtures" / "h200_steps" / "h200-steps.json"
    return len(json.loads(steps.read_text(encoding="utf-8"))["cases"])


def _held_published(what: str) -> int:
    """The published speed measurements the speed tests hold: ``steps``, their ``sources`` or
    their ``cards``."""
    cases = json.loads((MEASUREMENTS_DIR / "published_speed.json").read_text(encoding="utf-8"))
    held = [case for case in cases["cases"] if case["held"]]
    if what == "steps":
        return len(held)
    return len({case["source" if what == "sources" else "card"] for case in held})


DOC_FIGURES: tuple[tuple[str, str, Any], ...] = (
    ("accuracy.md", r"checks all (\d+) seed models", _seed_models),
    ("accuracy.md", r"\*\*(\d+) steps on an H200 SXM\*\*", _h200_steps),
    ("accuracy.md", r"chosen on the (\d+) H200 steps", _h200_steps),
    ("accuracy.md", r"With them (\d+) published\s+steps", lambda: _held_published("steps")),
    ("accuracy.md", r"steps from (\d+) sources", lambda: _held_published("sources")),
    ("accuracy.md", r"sources on (\d+) card types are held", lambda: _held_published("cards")),
)
"""Counts docs/ states in prose, each with what it counts: the seed models the shape tests
check, the H200 steps the speed constants were chosen on, the published steps the speed tests
hold (``held``), their sources and cards. The figures in the generated blocks (``make
accuracy``, ``make bench``) are checked where they are written."""


@pytest.mark.parametrize(("document", "pattern", "count"), DOC_FIGURES)
def test_the_documents_counts_are_the_datas(document: str, pattern: str, count: Any) -> None:
    found = re.search(pattern, (DOCS / document).read_text(encoding="utf-8"))
    assert found is not None, f"{document} no longer says {pattern!r}: update DOC_FIGURES"
    assert int(found.group(1)) == count()

