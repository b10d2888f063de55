"""Hand-written SQL lives in ``.sql`` files as named statements (config/sql.py): each file parses
into unique, non-empty statements, states come from the enum, no module assembles a statement
from fragments, and every statement a module names exists."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import TypeGuard

import pytest
from django.db import connection

from config.sql import StatementFileError, load_statements
from delivery.models import CircuitState, DeliveryAttemptOutcome, DeliveryState, EndpointStatus
from extraction.models import JobState

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("config", "accounts", "extraction", "delivery")

# The statements that must stay named statements, written out in their .sql file, never ORM
# calls: the hot path of every job and delivery (a statement per request, claim, completion or
# publish), the set-based sweeps, and the guarded transitions whose row count decides. One- and
# two-line lookups elsewhere are the ORM's (Django compiles them fast enough off the hot path).
MUST_BE_NAMED: dict[str, frozenset[str]] = {
    "accounts/models.sql": frozenset({"find_active_token"}),
    "extraction/models.sql": frozenset({"document_reference"}),
    "extraction/intake/acceptance.sql": frozenset({"accept_job"}),
    "extraction/outbox/relay.sql": frozenset({"claim_unpublished", "mark_published", "release_failed"}),
    "extraction/execution/lifecycle.sql": frozenset(
        {
            "take_in_requested_events", "claim_fair", "extend_leases", "lock_jobs_in_id_order", "complete_jobs",
            "schedule_retry", "fail_running", "hand_back", "hand_back_interrupted", "approve_review", "reject_review",
            "reap_for_retry", "reap_failed", "expire_deadline", "recover_ingress", "cancel_job", "rerun_job",
        }
    ),
    "extraction/notify/notifier.sql": frozenset({"new_events"}),
    "delivery/fan_out.sql": frozenset({"insert_webhook_event", "insert_delivery"}),
    "delivery/dispatch.sql": frozenset(
        {
            "lock_due_delivery", "hold_delivery", "fail_spent_delivery", "start_attempt", "take_probe",
            "record_delivery_outcome",
        }
    ),
    "delivery/scheduling.sql": frozenset({"reap_expired_leases", "take_due_deliveries"}),
}  # fmt: skip

# Production modules that run a statement written in the code rather than a named one, and why.
# Every other module's cursor runs only SQL["name"] (or no raw SQL at all).
INLINE_SQL_ALLOWED: dict[str, str] = {
    "config/health.py": "the readiness probe's SELECT 1",
    "config/metrics.py": "a scrape's own statement_timeout (set_config), before its named queries",
    "config/db.py": "database_now(): the database's clock, shared by every app",
    "delivery/receiver.py": "meant to be copied into an integrator's code: psycopg.sql composes its table names",
}

# Files of the database's functions and triggers, which migrations apply (config.sql.ApplyStatementFile)
# rather than a module beside them, and where the state constants are spelt; tests/extraction/test_database_functions.py checks them.
APPLIED_BY_MIGRATIONS = ("extraction/functions.sql", "delivery/functions.sql")

# Modules that still assemble a statement from fragments, and why. Only shrinks (it is empty:
# keep it so).
ASSEMBLING_SQL_ALLOWED: dict[str, str] = {}


def _sql_files() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.sql"))


def _python_modules() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py") if "migrations" not in p.parts)


def _relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


# --- the loader ---------------------------------------------------------------------------------


def test_a_statement_file_reads_as_named_statements_without_their_documentation(tmp_path: Path) -> None:
    path = tmp_path / "jobs.sql"
    path.write_text(
        "-- Statements about jobs.\n\n"
        "-- name: count_jobs\n-- How many jobs there are.\n--\n-- (all of them)\n"
        "SELECT count(*)\n  -- a comment in the statement stays\n  FROM extraction_jobs\n\n\n"
        "-- name: one_job\nSELECT * FROM extraction_jobs WHERE id = %(job_id)s\n"
    )
    statements = load_statements(path)
    assert dict(statements) == {
        "count_jobs": "SELECT count(*)\n  -- a comment in the statement stays\n  FROM extraction_jobs\n",
        "one_job": "SELECT * FROM extraction_jobs WHERE id = %(job_id)s\n",
    }
    with pytest.raises(KeyError, match="jobs.sql has no statement named 'no_such'"):
        statements["no_such"]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("-- name: a\nSELECT 1\n-- name: a\nSELECT 2\n", r"x\.sql:3: statement 'a' is defined twice"),
        ("-- name:\nSELECT 1\n", r"x\.sql:1: '' is not a statement name"),
        ("-- name: Claim-Next\nSELECT 1\n", r"x\.sql:1: 'Claim-Next' is not a statement name"),
        ("-- name: a\n-- only documentation\n\n-- name: b\nSELECT 1\n", r"x\.sql:1: statement 'a' has no SQL"),
        ("SELECT 1\n-- name: a\nSELECT 2\n", r"x\.sql:1: SQL before the first '-- name:' line"),
        ("-- nothing here\n", r"no '-- name:' statement"),
    ],
    ids=["duplicate", "empty-name", "not-an-identifier", "no-sql", "sql-before-a-name", "no-statement"],
)
def test_a_malformed_statement_file_is_refused_with_its_line(tmp_path: Path, text: str, error: str) -> None:
    path = tmp_path / "x.sql"
    path.write_text(text)
    with pytest.raises(StatementFileError, match=error):
        load_statements(path)


# --- the files ------------------------------------------------------------------------------------


def test_every_sql_file_has_unique_named_non_empty_statements() -> None:
    files = _sql_files()
    assert files
    for path in files:
        statements = load_statements(path)  # raises on a duplicate, empty or missing name
        assert all(sql.strip() for sql in statements.values()), path


def test_every_statement_that_must_be_named_is() -> None:
    missing = {
        file: sorted(names - set(load_statements(ROOT / file)))
        for file, names in MUST_BE_NAMED.items()
        if names - set(load_statements(ROOT / file))
    }
    assert missing == {}


_QUOTED = re.compile(r"'((?:[^']|'')*)'")


def _statement_files() -> list[Path]:
    """The .sql files of statements: every one but the functions files that define the constants."""
    return [path for path in _sql_files() if _relative(path) not in APPLIED_BY_MIGRATIONS]


def test_no_sql_file_spells_a_job_state() -> None:
    """States come from the enum: job_state_ready() and so on (extraction/functions.sql, checked below),
    or a parameter. A literal 'READY' would drift from JobState unseen."""
    states = set(JobState.values)
    spelled = [
        (_relative(path), literal)
        for path in _statement_files()
        for literal in _QUOTED.findall(path.read_text())
        if literal in states
    ]
    assert not spelled


def test_no_sql_file_spells_a_delivery_state() -> None:
    """Delivery states, endpoint statuses, circuit states and attempt outcomes come from
    delivery/functions.sql's constants (delivery_state_pending() and so on, checked below) or a
    parameter: a literal 'pending' would drift from DeliveryState unseen."""
    values = {v for enum in (DeliveryState, EndpointStatus, CircuitState, DeliveryAttemptOutcome) for v in enum.values}
    spelled = [
        (_relative(path), literal)
        for path in _statement_files()
        for literal in _QUOTED.findall(path.read_text())
        if literal in values
    ]
    assert not spelled


STATE_CONSTANTS = {
    "job_state": JobState,
    "delivery_state": DeliveryState,
    "endpoint_status": EndpointStatus,
    "circuit_state": CircuitState,
    "delivery_attempt": DeliveryAttemptOutcome,
}


@pytest.mark.django_db
@pytest.mark.parametrize("prefix", STATE_CONSTANTS)
def test_the_state_constants_in_the_database_are_the_enums_values(prefix: str) -> None:
    enum = STATE_CONSTANTS[prefix]
    with connection.cursor() as cursor:
        cursor.execute("SELECT proname FROM pg_proc WHERE proname LIKE %s", [prefix.replace("_", "\\_") + "\\_%"])
        functions = {name for (name,) in cursor.fetchall()}
        assert functions == {f"{prefix}_{member.name.lower()}" for member in enum}
        for member in enum:
            cursor.execute(f"SELECT {prefix}_{member.name.lower()}()")
            assert cursor.fetchone()[0] == member.value


# --- the modules ----------------------------------------------------------------------------------

_EXECUTE = {"execute", "executemany"}


def _is_psycopg_sql(node: ast.expr) -> TypeGuard[ast.Call]:
    """A call of psycopg's ``sql.SQL(...)`` (or ``psycopg.sql.SQL(...)``)."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "SQL"
        and ast.unparse(node.func.value) in ("sql", "psycopg.sql")
    )


def _is_assembled(node: ast.expr) -> bool:
    """An f-string with a placeholder, a ``+`` or ``%`` of strings, or a ``.format()`` call.

    Not assembly: psycopg's composition of a fixed template, ``sql.SQL("... {t} ...").format(
    t=sql.Identifier(name))``, which quotes each identifier it merges (and makes anything else
    a quoted literal). ``sql.SQL`` of an assembled string, or ``.format`` on a template that is
    not a string constant, still is."""
    if isinstance(node, ast.JoinedStr):
        return any(isinstance(part, ast.FormattedValue) for part in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mod):
        return True
    if _is_psycopg_sql(node):
        return any(_is_assembled(arg) for arg in node.args)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        template = node.func.value
        fixed = (
            _is_psycopg_sql(template)
            and len(template.args) == 1
            and isinstance(template.args[0], ast.Constant)
            and isinstance(template.args[0].value, str)
        )
        return not fixed
    return False


def _assignments(tree: ast.Module) -> dict[str, list[ast.expr]]:
    """Every value each name is assigned anywhere in the module (``a, b = x, y`` pairs them up)."""
    values: dict[str, list[ast.expr]] = {}

    def bind(target: ast.expr, value: ast.expr) -> None:
        if isinstance(target, ast.Name):
            values.setdefault(target.id, []).append(value)
        elif isinstance(target, ast.Tuple | ast.List):
            if isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(target.elts):
                for t, v in zip(target.elts, value.elts, strict=True):
                    bind(t, v)
            else:
                for t in target.elts:
                    bind(t, value)

    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                bind(target, node.value)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            bind(node.target, node.value)
    return values


def _queries(tree: ast.Module) -> list[ast.Call]:
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _EXECUTE
        and (node.args or any(k.arg == "query" for k in node.keywords))
    ]


def _query_argument(call: ast.Call) -> ast.expr:
    return call.args[0] if call.args else next(k.value for k in call.keywords if k.arg == "query")


def assembled_queries(source: str) -> list[int]:
    """Lines of ``execute``/``executemany`` calls whose statement is assembled, directly or
    through a name assigned an assembled value anywhere in the module."""
    tree = ast.parse(source)
    values = _assignments(tree)
    lines = []
    for call in _queries(tree):
        query = _query_argument(call)
        if _is_assembled(query) or (
            isinstance(query, ast.Name) and any(_is_assembled(v) for v in values.get(query.id, []))
        ):
            lines.append(call.lineno)
    return lines


def test_the_assembly_check_sees_fstrings_concatenation_and_format() -> None:
    source = """
TAIL = " WHERE id = %s"
HEAD = "SELECT 1 FROM t" + TAIL
def f(cursor, where, n):
    cursor.execute(f"SELECT 1 FROM t WHERE {where}")
    cursor.execute("SELECT 1 FROM t" + TAIL, [n])
    cursor.execute("SELECT {} FROM t".format(where))
    cursor.execute(HEAD, [n])
    cursor.execute("SELECT %s FROM t" % where)
    cursor.execute(SQL["one"], {"n": n})
    cursor.execute("SELECT 1")
"""
    assert assembled_queries(source) == [5, 6, 7, 8, 9]


def test_the_assembly_check_accepts_psycopg_composition_of_a_fixed_template() -> None:
    source = """
from psycopg import sql
def f(cursor, table, where):
    cursor.execute(sql.SQL("SELECT 1 FROM {}").format(sql.Identifier(table)))
    query = sql.SQL("DELETE FROM {t} WHERE id = %s").format(t=sql.Identifier(table))
    cursor.execute(query, [1])
    cursor.execute(sql.SQL(f"SELECT 1 FROM t WHERE {where}").format())
    cursor.execute(sql.SQL("SELECT 1 FROM t WHERE " + where))
    cursor.execute(sql.SQL(where).format(sql.Identifier(table)))
"""
    assert assembled_queries(source) == [7, 8, 9]


def test_no_module_assembles_a_statement_from_fragments() -> None:
    print("still allowed to assemble SQL:", *(f"{m} ({why})" for m, why in ASSEMBLING_SQL_ALLOWED.items()), sep="\n  ")
    found = {_relative(p): lines for p in _python_modules() if (lines := assembled_queries(p.read_text()))}
    assert {m: lines for m, lines in found.items() if m not in ASSEMBLING_SQL_ALLOWED} == {}
    assert set(ASSEMBLING_SQL_ALLOWED) <= set(found), "an allowed module no longer assembles: drop it from the list"


def _statement_names(tree: ast.Module) -> tuple[list[str], list[int]]:
    """The names looked up as ``SQL["name"]``, and the lines of ``SQL[...]`` with any other key."""
    names, dynamic = [], []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "SQL":
            if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
                names.append(node.slice.value)
            else:
                dynamic.append(node.lineno)
    return names, dynamic


def _loads_own_file(tree: ast.Module) -> bool:
    return any(
        isinstance(node, ast.Assign)
        and [getattr(t, "id", None) for t in node.targets] == ["SQL"]
        and ast.unparse(node.value) == "load_statements(Path(__file__).with_suffix('.sql'))"
        for node in tree.body
    )


def test_every_statement_a_module_names_exists_and_every_statement_is_used() -> None:
    for path in _sql_files():
        if _relative(path) in APPLIED_BY_MIGRATIONS:
            continue
        module = path.with_suffix(".py")
        assert module.is_file(), f"{_relative(path)} has no module beside it"
        tree = ast.parse(module.read_text())
        assert _loads_own_file(tree), f"{_relative(module)} does not load {path.name} as SQL"
        names, dynamic = _statement_names(tree)
        statements = load_statements(path)
        assert not dynamic, f"{_relative(module)}: SQL[...] by a computed name on lines {dynamic}"
        assert sorted(set(names) - set(statements)) == [], _relative(module)
        assert sorted(set(statements) - set(names)) == [], f"unused statements in {_relative(path)}"


def _is_named_statement(node: ast.expr, values: dict[str, list[ast.expr]]) -> bool:
    """``SQL["name"]``; or ``TABLE[key]`` where TABLE is a dict of ``SQL["name"]`` values; or a
    name assigned only those (one that is never assigned is a parameter: the caller's statement)."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        if node.value.id == "SQL":
            return True
        tables = values.get(node.value.id, [])
        return bool(tables) and all(
            isinstance(t, ast.Dict)
            and all(isinstance(v, ast.Subscript) and getattr(v.value, "id", None) == "SQL" for v in t.values)
            for t in tables
        )
    if isinstance(node, ast.Name):
        return all(_is_named_statement(v, values) for v in values.get(node.id, []))
    return False


def test_production_modules_run_only_named_statements() -> None:
    inline = {}
    for path in _python_modules():
        tree = ast.parse(path.read_text())
        values = _assignments(tree)
        lines = [call.lineno for call in _queries(tree) if not _is_named_statement(_query_argument(call), values)]
        if lines:
            inline[_relative(path)] = lines
    assert sorted(inline) == sorted(INLINE_SQL_ALLOWED), inline
