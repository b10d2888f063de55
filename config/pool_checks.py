"""psycopg_pool's ``check`` and ``reset`` callbacks for the workers' pools: a pooled connection
is checked at checkout (an empty query, one round trip) only when it has sat unused longer than
a bound.

A connection some thread gave back a moment ago was talking to the server a moment ago; checking
it again cost the llm worker a third of its transactions per job (three checkouts per attempt,
each a round trip of its own: #25's execution_bench). A connection that sat idle longer is the
one a restart or failover may have killed meanwhile, and it is still checked, so such a step
finds a live connection instead of failing. The price of the bound: a server lost within it of
a connection's last use fails the step that meets the dead connection (the step's own retry or
outage handling takes it from there, as with POSTGRES_POOL_CHECK=0).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from psycopg import Connection
from psycopg_pool import ConnectionPool

# The connection's attribute holding when it was last given back (time.monotonic()).
_RETURNED_AT = "_pool_returned_at"


def stamp_returned(conn: Connection) -> None:
    """``reset``: note when the connection came back to the pool (after its last statement)."""
    setattr(conn, _RETURNED_AT, time.monotonic())


def check_when_idle(idle_seconds: float) -> Callable[[Connection], None]:
    """``check``: psycopg_pool's own check (an empty query; raises if the connection is dead)
    for a connection that has been idle longer than ``idle_seconds`` or never given back."""

    def check(conn: Connection) -> None:
        returned_at = getattr(conn, _RETURNED_AT, None)
        if returned_at is None or time.monotonic() - returned_at > idle_seconds:
            ConnectionPool.check_connection(conn)

    return check
