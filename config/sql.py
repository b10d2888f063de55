"""Hand-written SQL as named statements, read once from the ``.sql`` file beside the module that
runs them: ``SQL = load_statements(Path(__file__).with_suffix(".sql"))``, then
``cursor.execute(SQL["claim_fair"], params)``. A block opens with ``-- name: <identifier>``; the
comment lines right under it document the statement and are not sent. Statements take named
parameters and are never assembled from fragments: what the file shows is what runs.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from django.db import migrations

_NAME_LINE = re.compile(r"^--\s*name:\s*(?P<name>\S*)\s*$")
_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]*$")


class StatementFileError(ValueError):
    """A ``.sql`` file that does not parse into unique, named, non-empty statements."""


class Statements(Mapping[str, str]):
    """The statements of one file by name; a missing name says which file it was looked up in."""

    def __init__(self, path: Path, statements: dict[str, str]) -> None:
        self.path = path
        self._statements = statements

    def __getitem__(self, name: str) -> str:
        try:
            return self._statements[name]
        except KeyError:
            raise KeyError(f"{self.path.name} has no statement named {name!r}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._statements)

    def __len__(self) -> int:
        return len(self._statements)

    def __repr__(self) -> str:
        return f"<Statements {self.path.name}: {', '.join(self._statements)}>"


def load_statements(path: Path) -> Statements:
    """Parse ``path`` into its named statements.

    1. Lines before the first name line may only be comments or blank (a file header).
    2. Each ``-- name: <identifier>`` opens a statement; the comment lines directly under it
       are its documentation and left out; the rest, up to the next name line, is its SQL.
    3. A name that is not a lowercase identifier, used twice, or with no SQL under it raises
       :class:`StatementFileError` naming the file and line.
    """
    statements: dict[str, str] = {}
    name: str | None = None
    opened_at = 0
    body: list[str] = []
    in_doc = False

    def close() -> None:
        if name is None:
            return
        sql = "\n".join(body).strip()
        if not sql:
            raise StatementFileError(f"{path}:{opened_at}: statement {name!r} has no SQL")
        statements[name] = sql + "\n"

    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        match = _NAME_LINE.match(line.strip())
        if match:
            close()
            name, opened_at, body, in_doc = match["name"], number, [], True
            if not _IDENTIFIER.match(name):
                raise StatementFileError(f"{path}:{number}: {name!r} is not a statement name (lowercase identifier)")
            if name in statements:
                raise StatementFileError(f"{path}:{number}: statement {name!r} is defined twice")
            continue
        if name is None:
            if line.strip() and not line.lstrip().startswith("--"):
                raise StatementFileError(f"{path}:{number}: SQL before the first '-- name:' line")
            continue
        if in_doc and line.lstrip().startswith("--"):
            continue
        in_doc = False
        body.append(line)
    close()
    if not statements:
        raise StatementFileError(f"{path}: no '-- name:' statement")
    return Statements(path, statements)


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class ApplyStatementFile(migrations.RunSQL):
    """A migration operation that runs every statement of ``path`` in file order: an app's
    current database functions and triggers, each a ``CREATE OR REPLACE`` (so an older migration
    applying a newer file on a fresh database is harmless). ``sha256`` is the file's digest when
    the migration was written; a test checks that the latest migration applying a file names
    its current digest, so a changed file always comes with a migration that applies it to
    databases already migrated. Backwards it does nothing: the previous text is history."""

    def __init__(self, path: Path, *, sha256: str) -> None:
        self.path = path
        self.sha256 = sha256
        super().__init__(sql=list(load_statements(path).values()), reverse_sql=migrations.RunSQL.noop)

    def describe(self) -> str:
        return f"Apply {self.path.name} (sha256 {self.sha256[:12]})"

    def deconstruct(self) -> tuple[str, list[object], dict[str, object]]:
        return (f"{type(self).__module__}.{type(self).__qualname__}", [], {"path": self.path, "sha256": self.sha256})
