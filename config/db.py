"""Database helpers shared by the hot paths."""
from __future__ import annotations

import psycopg
from django.db import connection


def prepared_cursor() -> psycopg.Cursor:
    """A server-side-binding cursor on Django's connection, in its current transaction, for
    statements run with ``execute(..., prepare=True)``.

    The claim, the completion, the ingress step and the relay's claim run thousands of times
    per connection and planning them costs PostgreSQL more than running them; prepared, each
    is planned once per connection (a pooled connection keeps its statements). Django's own
    cursors bind on the client and are never prepared. With POSTGRES_PREPARED_STATEMENTS off
    (settings) ``prepare=True`` is ignored and these are planned every time, as before.
    """
    connection.ensure_connection()
    return psycopg.Cursor(connection.connection)
