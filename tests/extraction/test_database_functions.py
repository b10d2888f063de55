"""Each app's functions.sql (extraction's, delivery's) is the one current source of its database
functions and triggers: a freshly migrated database defines exactly what they say, and the
latest migration that applies each was written for its current text (so a change to the file
comes with a migration that brings databases already migrated up to it)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.db import connection, transaction
from django.db.migrations.loader import MigrationLoader

from config.sql import ApplyStatementFile, file_sha256, load_statements

ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS_FILES = {"extraction": ROOT / "extraction" / "functions.sql", "delivery": ROOT / "delivery" / "functions.sql"}

# Every function of the public schema that no extension owns, as PostgreSQL prints it back.
DEFINED_FUNCTIONS = """
SELECT p.proname, p.oid::regprocedure::text, pg_get_functiondef(p.oid)
  FROM pg_proc p
  JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname = 'public'
   AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid
                                            AND d.deptype = 'e')
 ORDER BY 2
"""
DEFINED_TRIGGERS = "SELECT tgname, pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal ORDER BY 1"

_CREATED = re.compile(r"CREATE OR REPLACE (?P<kind>FUNCTION|TRIGGER) (?P<name>\w+)")


def _defined() -> tuple[list[tuple[str, str, str]], list[tuple[str, str]]]:
    with connection.cursor() as cursor:
        cursor.execute(DEFINED_FUNCTIONS)
        functions = cursor.fetchall()
        cursor.execute(DEFINED_TRIGGERS)
        return functions, cursor.fetchall()


@pytest.mark.django_db
def test_a_migrated_database_defines_exactly_what_the_file_says():
    functions, triggers = _defined()
    with transaction.atomic():
        with connection.cursor() as cursor:
            for path in FUNCTIONS_FILES.values():
                for statement in load_statements(path).values():
                    cursor.execute(statement)
        applied_again = _defined()
        transaction.set_rollback(True)

    # Applying the file changes nothing: every function and trigger it names is already so.
    assert applied_again == (functions, triggers)
    # And the database has nothing the file does not name (a function dropped from the file
    # needs a migration that drops it).
    created = [m.groupdict() for path in FUNCTIONS_FILES.values() for m in _CREATED.finditer(path.read_text())]
    assert sorted(name for name, _, _ in functions) == sorted(c["name"] for c in created if c["kind"] == "FUNCTION")
    assert [name for name, _ in triggers] == sorted(c["name"] for c in created if c["kind"] == "TRIGGER")


@pytest.mark.parametrize("app", FUNCTIONS_FILES)
def test_the_latest_migration_applying_the_file_was_written_for_its_current_text(app: str):
    functions_file = FUNCTIONS_FILES[app]
    loader = MigrationLoader(None, ignore_no_migrations=True)
    (leaf,) = loader.graph.leaf_nodes(app)
    applying = [
        (key, operation)
        for key in loader.graph.forwards_plan(leaf)
        if key[0] == app
        for operation in loader.graph.nodes[key].operations
        if isinstance(operation, ApplyStatementFile) and operation.path == functions_file
    ]
    assert applying, f"no migration applies {app}/functions.sql"
    key, latest = applying[-1]
    assert latest.sha256 == file_sha256(functions_file), (
        f"{app}/functions.sql changed since {key[1]} applied it: add a migration that applies it "
        f"again with sha256={file_sha256(functions_file)}"
    )
