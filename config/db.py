"""Database helpers shared by the hot paths."""

from __future__ import annotations

import time
from collections.abc import Iterable
from datetime import datetime
from typing import Any, Self

import psycopg
import psycopg.sql
from django.conf import settings
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


def start_sessions_with(**values: str) -> None:
    """Start this process's PostgreSQL sessions with these settings (``-c name=value`` in
    libpq's ``options``), beside what settings.DATABASES gives every process. Call it before
    the process's first connection: an open or pooled connection keeps what it started with."""
    options = connection.settings_dict.setdefault("OPTIONS", {})
    extra = " ".join(f"-c {name}={value}" for name, value in values.items())
    options["options"] = f"{options.get('options', '')} {extra}".strip()


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


def listen_conninfo(**extra: str) -> str:
    """``database_conninfo`` for a LISTEN session: PostgreSQL itself where POSTGRES_LISTEN_HOST
    (and _PORT) say so, past a transaction-mode pooler that cannot hold one."""
    direct = {"host": settings.POSTGRES_LISTEN_HOST, "port": settings.POSTGRES_LISTEN_PORT}
    return database_conninfo(**{key: value for key, value in direct.items() if value}, **extra)


class Notifications:
    """``LISTEN channel`` on a dedicated autocommit connection, for a loop that also polls.

    Only a hint: a notification sent while the connection was down is lost, so a (re)connection
    counts as one (whatever became ready meanwhile is looked at now), and the caller still polls.
    Not thread-safe: one waiting thread."""

    def __init__(self, channel: str, *, application_name: str) -> None:
        self._listen = psycopg.sql.SQL("LISTEN {}").format(psycopg.sql.Identifier(channel))
        self._application_name = application_name
        self._conn: psycopg.Connection | None = None

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` for a notification; True if one came (or the connection is new).
        Every notification already received is consumed with it: one look serves them all. A
        lost database: False after up to ``timeout`` (at most a second) of backing off."""
        try:
            if self._conn is None or self._conn.closed:
                self._conn = psycopg.connect(listen_conninfo(application_name=self._application_name), autocommit=True)
                self._conn.execute(self._listen)
                return True
            first = self._conn.notifies(timeout=timeout, stop_after=1)
            try:
                woke = next(first, None) is not None
            finally:
                first.close()  # it holds the connection's lock until closed
            if woke:
                for _ in self._conn.notifies(timeout=0):
                    pass
            return woke
        except psycopg.Error:
            self.close()
            time.sleep(min(timeout, 1.0))
            return False

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except psycopg.Error:
                pass
