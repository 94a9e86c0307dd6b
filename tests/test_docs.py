"""The architecture document and the code that cites it stay matched.

Modules cite ``docs/architecture.md rule N`` or ``docs/architecture.md, "Section"``. Earlier they
cited "ARCHITECTURE rule N" from a design note outside the repository, which the next maintainer
could not read and nothing kept in step with the code. These tests fail when a module cites any
architecture document other than ``docs/architecture.md``, cites a rule number or a section the
document does not define, or when the document names a path (in backticks) that is gone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCUMENT = ROOT / "docs" / "architecture.md"
CITED_AS = "docs/architecture.md"

SCANNED_DIRS = ("app", "tests", "tools", "benchmarks", "docs")
"""Where code and its documents live: every module, test, tool, migration, benchmark, template
(the last three inside app/) and document (this one's own examples included) is scanned."""
SCANNED_SUFFIXES = frozenset({".py", ".html", ".md"})
SCANNED_FILES = ("README.md",)

OUTSIDE_DOCUMENT = re.compile(r"ARCHITECTURE|(?i:(?<!docs/)\barchitecture\.md)")
"""Any other architecture document: the old outside note is spelled ARCHITECTURE, and a path
ending in architecture.md that is not ``docs/architecture.md`` points somewhere else. (The plain
word "architecture", as in a GPU's architecture, is not a citation and is not matched.)"""

RULE_HEADING = re.compile(r"^### Rule (\d+): (.+)$", re.MULTILINE)
HEADING = re.compile(r"^#{2,4} (.+)$", re.MULTILINE)
RULE_CITATION = re.compile(r"^,?\s*rules?\s+(\d+(?:\s*(?:,|and|or)\s*\d+)*)", re.IGNORECASE)
SECTION_CITATION = re.compile(r'^,?\s*(?:section\s+)?["“]([^"”]+)["”]', re.IGNORECASE)
CITATION_TAIL_CHARS = 120
"""How far after ``docs/architecture.md`` a rule number or section name is looked for (it may
continue on the next line of a docstring or comment)."""
DOCUMENTED_PATH = re.compile(
    r"`((?:app|tests|templates|static|migrations|tools|benchmarks|docs)/[\w./-]*)`"
)


@dataclass(frozen=True)
class Citation:
    """One citation of the document: where, and the rules or the section it names."""

    where: str
    rules: tuple[int, ...] = ()
    section: str | None = None


def scanned_files() -> list[Path]:
    """Every source file that may cite the document, this test itself excepted (it spells out
    the patterns it looks for)."""
    files = [ROOT / name for name in SCANNED_FILES]
    for folder in SCANNED_DIRS:
        files += [p for p in sorted((ROOT / folder).rglob("*"))
                  if p.suffix in SCANNED_SUFFIXES and p.is_file()]
    this = Path(__file__).resolve()
    return [p for p in files if p.resolve() != this and p.is_file()]


def defined_rules(text: str) -> dict[int, str]:
    return {int(number): title.strip() for number, title in RULE_HEADING.findall(text)}


def defined_sections(text: str) -> set[str]:
    return {title.strip().casefold() for title in HEADING.findall(text)}


def citations(text: str, where: str) -> list[Citation]:
    """The citations of ``docs/architecture.md`` in ``text``: the rules or section after each
    mention (a bare mention cites the whole document and names nothing to check)."""
    found: list[Citation] = []
    for match in re.finditer(re.escape(CITED_AS), text):
        line = text.count("\n", 0, match.start()) + 1
        tail = text[match.end():match.end() + CITATION_TAIL_CHARS]
        tail = re.sub(r"\s*\n\s*(?:#\s*)?", " ", tail)  # a docstring's or comment's next line
        rules = RULE_CITATION.match(tail)
        section = SECTION_CITATION.match(tail)
        if rules is not None:
            numbers = tuple(int(n) for n in re.findall(r"\d+", rules.group(1)))
            found.append(Citation(f"{where}:{line}", rules=numbers))
        elif section is not None:
            found.append(Citation(f"{where}:{line}", section=section.group(1).strip()))
    return found


def undefined(cited: list[Citation], text: str) -> list[str]:
    """What the citations name that ``text`` (the document) does not define."""
    rules, sections = defined_rules(text), defined_sections(text)
    problems = [f"{c.where}: rule {n}" for c in cited for n in c.rules if n not in rules]
    problems += [f"{c.where}: section {c.section!r}" for c in cited
                 if c.section is not None and c.section.casefold() not in sections]
    return problems


def _relative(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_no_module_cites_an_architecture_document_other_than_docs_architecture_md() -> None:
    offenders = [
        f"{_relative(path)}:{text.count(chr(10), 0, match.start()) + 1}: {match.group(0)}"
        for path in scanned_files()
        for text in [path.read_text(encoding="utf-8")]
        for match in OUTSIDE_DOCUMENT.finditer(text)
    ]
    assert not offenders, "cite docs/architecture.md instead:\n" + "\n".join(offenders)


def test_every_cited_rule_and_section_is_defined_in_the_document() -> None:
    document = DOCUMENT.read_text(encoding="utf-8")
    cited = [c for path in scanned_files()
             for c in citations(path.read_text(encoding="utf-8"), _relative(path))]
    problems = undefined(cited, document)
    assert not problems, "not in docs/architecture.md:\n" + "\n".join(problems)


def test_the_rules_are_numbered_from_one_without_gaps() -> None:
    """So that "rule N" stays unambiguous: a rule that goes leaves its number to no other."""
    numbers = list(defined_rules(DOCUMENT.read_text(encoding="utf-8")))
    assert numbers == list(range(1, len(numbers) + 1))


def test_every_path_the_document_names_exists() -> None:
    document = DOCUMENT.read_text(encoding="utf-8")
    missing = sorted({path for path in DOCUMENTED_PATH.findall(document)
                      if not (ROOT / path).exists()})
    assert not missing, "docs/architecture.md names paths that are gone: " + ", ".join(missing)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("(docs/architecture.md rule 5)", [Citation("m.py:1", rules=(5,))]),
        ("docs/architecture.md rules 4 and 11", [Citation("m.py:1", rules=(4, 11))]),
        ('see docs/architecture.md, "Where caches live"',
         [Citation("m.py:1", section="Where caches live")]),
        ('"""Never commit (docs/architecture.md\n    rule 5)."""',
         [Citation("m.py:1", rules=(5,))]),
        ("# docs/architecture.md\n# rule 2", [Citation("m.py:1", rules=(2,))]),
        ("see docs/architecture.md for the layers", []),
    ],
)
def test_citations_are_read_with_their_rules_or_section(
    text: str, expected: list[Citation]
) -> None:
    assert citations(text, "m.py") == expected


def test_a_rule_or_section_the_document_lacks_is_reported() -> None:
    """The check itself: a citation of a rule or section that is not there is caught."""
    document = "### Rule 1: One\n\n## Where caches live\n"
    cited = citations('docs/architecture.md rule 1; docs/architecture.md rule 2; '
                      'docs/architecture.md, "Nowhere"; docs/architecture.md, '
                      '"where caches live"', "m.py")
    assert undefined(cited, document) == ["m.py:1: rule 2", "m.py:1: section 'Nowhere'"]


@pytest.mark.parametrize(
    ("text", "cites_outside"),
    [
        ("(ARCHITECTURE rule 3)", True),
        ("see ../shared/design/architecture.md", True),
        ("see docs/architecture.md rule 3", False),
        ("the card's architecture (Blackwell)", False),
    ],
)
def test_other_architecture_documents_are_recognised(text: str, cites_outside: bool) -> None:
    assert bool(OUTSIDE_DOCUMENT.search(text)) is cites_outside


MODULE_ROW = re.compile(r"^\| `(app/[\w/.]*)` \| (.*) \|$", re.MULTILINE)
"""A row of the table "What each package owns": the package (``app/x/``) or module
(``app/x.py``) in the first cell, what it owns in the second."""


def module_table(text: str) -> dict[str, str]:
    """Each row of "What each package owns": its package or module, and the text of its row."""
    return dict(MODULE_ROW.findall(text))


def unlisted_modules(table: dict[str, str], modules: list[str]) -> list[str]:
    """The modules (paths under app/) that the table does not name: a module is named by its
    own row, or in the row of the deepest package holding it, by its path from there
    (``v1/bodies.py``) or its file name, in backticks."""
    unlisted = []
    for module in modules:
        if module in table:
            continue
        owners = [package for package in table
                  if package.endswith("/") and module.startswith(package)]
        if not owners:
            unlisted.append(module)
            continue
        owner = max(owners, key=len)
        names = {module.removeprefix(owner), module.rsplit("/", 1)[-1]}
        if not any(f"`{name}`" in table[owner] for name in names):
            unlisted.append(module)
    return unlisted


def test_the_module_table_names_every_module() -> None:
    """A new module is named in its package's row, saying what it owns (16 modules were
    missing when this test was written)."""
    modules = sorted(path.relative_to(ROOT).as_posix() for path in (ROOT / "app").rglob("*.py")
                     if path.name != "__init__.py" and "migrations" not in path.parts)
    table = module_table(DOCUMENT.read_text(encoding="utf-8"))
    assert unlisted_modules(table, modules) == []


def test_a_module_the_table_does_not_name_is_reported() -> None:
    table = module_table("| `app/x/` | `a.py`: this; `v1/b.py`: that |\n"
                         "| `app/main.py` | the factory |\n")
    assert table == {"app/x/": "`a.py`: this; `v1/b.py`: that", "app/main.py": "the factory"}
    assert unlisted_modules(table, ["app/x/a.py", "app/x/v1/b.py", "app/main.py",
                                    "app/x/c.py", "app/y/d.py"]) == ["app/x/c.py", "app/y/d.py"]
