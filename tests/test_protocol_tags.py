"""Every rule tag the repository cites (``ACC-5``, ``EXE-2/3/5``, ``RTY-1..3``) is defined in the
top-level PROTOCOL.md, so a clone without the original specification can look each one up.

The families are read from PROTOCOL.md itself (its ``## … (ACC)`` headings and ``**ACC-1**`` rule
lines), so adding a rule or a family there is all it takes. No database."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTOCOL = ROOT / "PROTOCOL.md"
# What is scanned: the application, its templates, its docs, its tests, benchmarks and evaluation.
SCANNED_DIRS = ("config", "accounts", "extraction", "delivery", "templates", "tests", "bench", "eval", "docs")
SCANNED_FILES = ("README.md", "CONTRIBUTING.md")
SCANNED_SUFFIXES = frozenset({".py", ".md", ".html", ".sql", ".js", ".txt"})
SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", ".venv"})

_RULE_LINE = re.compile(r"^\s*[-*]\s+\*\*(?P<tag>[A-Z]{2,4}-\d+)\*\*", re.MULTILINE)
_FAMILY_HEADING = re.compile(r"^#{2,6}\s.*\((?P<families>[A-Z]{2,4}(?:\s*,\s*[A-Z]{2,4})*)\)\s*$", re.MULTILINE)
# After the first number: more numbers joined by "..", an en dash or "/" (ACC-2..5, EXE-2/3/5).
_MORE_NUMBERS = r"(?P<rest>(?:(?:\.\.|–|/)\d+)*)"


@dataclass(frozen=True)
class Protocol:
    families: frozenset[str]
    defined: frozenset[str]


@dataclass(frozen=True)
class Citation:
    tag: str
    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.tag}  {self.path}:{self.line}"


def parse_protocol(text: str) -> Protocol:
    """The rule tags PROTOCOL.md defines and the families they (and its headings) belong to."""
    defined = frozenset(match["tag"] for match in _RULE_LINE.finditer(text))
    families = {tag.split("-")[0] for tag in defined}
    for heading in _FAMILY_HEADING.finditer(text):
        families.update(name.strip() for name in heading["families"].split(","))
    return Protocol(families=frozenset(families), defined=defined)


def _citation_pattern(families: Iterable[str]) -> re.Pattern[str]:
    names = "|".join(sorted(map(re.escape, families), key=len, reverse=True))
    return re.compile(rf"(?<![A-Za-z0-9_-])(?P<family>{names})-(?P<first>\d+){_MORE_NUMBERS}(?![A-Za-z0-9_])")


def _expand(family: str, first: str, rest: str) -> list[str]:
    """``ACC``, ``2``, ``..5`` → ACC-2 … ACC-5; ``EXE``, ``2``, ``/3/5`` → EXE-2, EXE-3, EXE-5."""
    numbers = [int(first)]
    for joiner, number in re.findall(r"(\.\.|–|/)(\d+)", rest):
        end = int(number)
        if joiner == "/" or end <= numbers[-1]:
            numbers.append(end)
        else:
            numbers.extend(range(numbers[-1] + 1, end + 1))
    return [f"{family}-{n}" for n in numbers]


def cited_tags(text: str, families: Iterable[str]) -> Iterator[tuple[int, str]]:
    """(line number, tag) for every rule tag of ``families`` cited in ``text``, ranges expanded."""
    pattern = _citation_pattern(families)
    for number, line in enumerate(text.splitlines(), start=1):
        for match in pattern.finditer(line):
            for tag in _expand(match["family"], match["first"], match["rest"]):
                yield number, tag


def undefined_citations(text: str, path: str, protocol: Protocol) -> list[Citation]:
    """The citations in ``text`` of tags PROTOCOL.md does not define."""
    return [
        Citation(tag=tag, path=path, line=number)
        for number, tag in cited_tags(text, protocol.families)
        if tag not in protocol.defined
    ]


def scanned_files(root: Path = ROOT) -> Iterator[Path]:
    this_file = Path(__file__).resolve()
    for name in SCANNED_FILES:
        if (root / name).is_file():
            yield root / name
    for directory in SCANNED_DIRS:
        for path in sorted((root / directory).rglob("*")):
            if (
                path.is_file()
                and path.suffix in SCANNED_SUFFIXES
                and not SKIPPED_DIRS.intersection(path.relative_to(root).parts)
                and path.resolve() != this_file
            ):
                yield path


def load_protocol() -> Protocol:
    return parse_protocol(PROTOCOL.read_text(encoding="utf-8"))


def test_every_cited_rule_tag_is_defined_in_protocol_md() -> None:
    protocol = load_protocol()
    assert protocol.defined, "PROTOCOL.md defines no rules (expected lines like '- **ACC-1** …')"
    undefined: list[Citation] = []
    for path in scanned_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        undefined.extend(undefined_citations(text, str(path.relative_to(ROOT)), protocol))
    assert not undefined, "rule tags cited but not defined in PROTOCOL.md:\n" + "\n".join(map(str, undefined))


def test_the_checker_reports_a_tag_protocol_md_does_not_define() -> None:
    protocol = load_protocol()
    text = "first line\n# the claim (EXE-1, EXE-99): see also ACC-2..5 and EXE-2/3/5\nBP-3/RTY-2, UTF-8, INV-2026-001\n"
    found = undefined_citations(text, "synthetic.py", protocol)
    assert [str(citation) for citation in found] == ["EXE-99  synthetic.py:2"]


def test_ranges_and_lists_are_expanded() -> None:
    families = {"ACC", "EXE", "BP", "RTY"}
    text = "ACC-2..5\nEXE-2/3/5, BP-3/RTY-2 and ACC-1–2\nCVE-2024-4032 BR-CO-17 XACC-1"
    assert list(cited_tags(text, families)) == [
        (1, "ACC-2"), (1, "ACC-3"), (1, "ACC-4"), (1, "ACC-5"),
        (2, "EXE-2"), (2, "EXE-3"), (2, "EXE-5"), (2, "BP-3"), (2, "RTY-2"), (2, "ACC-1"), (2, "ACC-2"),
    ]  # fmt: skip


def test_paths_named_in_protocol_md_exist() -> None:
    text = PROTOCOL.read_text(encoding="utf-8")
    named = {
        token.split("::")[0]
        for token in re.findall(r"`([^`\s]+)`", text)
        if "/" in token and re.search(r"(\.(py|md|html|js|sql)(::\w+)?|/)$", token) and not token.startswith("/")
    }
    missing = sorted(path for path in named if not (ROOT / path).exists())
    assert not missing, "PROTOCOL.md names paths that do not exist:\n" + "\n".join(missing)
