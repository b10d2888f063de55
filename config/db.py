"""Database helpers shared by the hot paths."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, Self

import psycopg
from django.db import connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from psycopg.abc import Params, Query


class DjangoErrorsCursor(psycopg.Cursor[Any]):
    """A psycopg cursor whose database errors arrive as Django's (``django.db.OperationalError``
    and so on, the psycopg error as ``__cause__``), as from Django's own cursors.

    Callers tell a database blip (requeue, retry) from a refusal (dead-letter) by Django's
    classes, and Django notices a broken connection only through ``wrap_database_errors``
    (it sets ``errors_occurred``, so ``close_if_unusable_or_obsolete`` drops the connection).
    """

    __slots__ = ("_wrap_errors",)

    def __init__(self, db: BaseDatabaseWrapper) -> None:
        super().__init__(db.connection)
        self._wrap_errors = db.wrap_database_errors

    def execute(
        self, query: Query, params: Params | None = None, *, prepare: bool | None = None, binary: bool | None = None
    ) -> Self:
        with self._wrap_errors:
            # One signature for psycopg's two overloads (a template takes no params).
            return super().execute(query, params, prepare=prepare, binary=binary)  # type: ignore[arg-type,misc]

    def executemany(self, query: Query, params_seq: Iterable[Params], *, returning: bool = False) -> None:
        with self._wrap_errors:
            super().executemany(query, params_seq, returning=returning)

    def fetchone(self) -> Any:
        with self._wrap_errors:
            return super().fetchone()

    def fetchmany(self, size: int = 0) -> list[Any]:
        with self._wrap_errors:
            return super().fetchmany(size)

    def fetchall(self) -> list[Any]:
        with self._wrap_errors:
            return super().fetchall()

    def __next__(self) -> Any:
        with self._wrap_errors:
            return super().__next__()


def prepared_cursor() -> DjangoErrorsCursor:
    """A server-side-binding cursor on Django's connection, in its current transaction, for
    ``execute(..., prepare=True)``: the hot statements (claim, completion, ingress, relay claim)
    cost PostgreSQL more to plan than to run, so each is planned once per pooled connection.
    Django's own cursors bind on the client. POSTGRES_PREPARED_STATEMENTS off ignores ``prepare``.
    """
    connection.ensure_connection()
    return DjangoErrorsCursor(connection)


# Keys of a database's OPTIONS that Django (not libpq) reads.
_DJANGO_ONLY_OPTIONS = frozenset({"pool", "prepare_threshold", "isolation_level", "server_side_binding", "assume_role"})


def database_conninfo(**extra: str) -> str:
    """libpq's connection string for the default database (the test database under tests), for
    the connections a process holds outside Django's (LISTEN, the notifier's queries): the same
    hosts, ports and libpq options as Django's, so they fail over with it (a host list with
    ``target_session_attrs``, the connect timeout, keepalives). ``extra`` adds or overrides."""
    db = connections["default"].settings_dict
    libpq_options = {k: v for k, v in db.get("OPTIONS", {}).items() if k not in _DJANGO_ONLY_OPTIONS}
    params = {
        "dbname": db["NAME"],
        "user": db.get("USER") or None,
        "password": db.get("PASSWORD") or None,
        "host": db.get("HOST") or None,
        "port": str(db.get("PORT") or "") or None,
        **libpq_options,
        **extra,
    }
    return psycopg.conninfo.make_conninfo(**{k: v for k, v in params.items() if v not in (None, "")})


def database_now() -> datetime:
    """The database's clock, ``now()``: the start of the current transaction, so it agrees with
    every ``now()`` the transaction's statements write (time is the database's, not the host's)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT now()")
        return cursor.fetchone()[0]
