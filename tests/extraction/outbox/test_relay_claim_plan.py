"""The relay's claim walks outbox_unpublished_idx in order (real PostgreSQL): its sessions start
without bitmap scans, so the walk marks the index entries of published rows dead as it passes
them, where a bitmap scan would visit every row published since the last vacuum, each claim."""

from __future__ import annotations

import copy
import uuid

import psycopg
import pytest
from django.db import connection

from config.db import database_conninfo, start_sessions_with
from extraction.outbox import relay

pytestmark = pytest.mark.django_db


@pytest.fixture
def relay_session_options(monkeypatch):
    """This process's connection settings as the relay command leaves them, undone after."""
    monkeypatch.setitem(connection.settings_dict, "OPTIONS", copy.deepcopy(connection.settings_dict["OPTIONS"]))
    start_sessions_with(enable_bitmapscan="off")


def test_the_relay_starts_its_sessions_without_bitmap_scans(relay_session_options):
    with psycopg.connect(database_conninfo()) as session:
        assert session.execute("SHOW enable_bitmapscan").fetchone() == ("off",)
        # Every process's own settings are still there.
        assert session.execute("SHOW statement_timeout").fetchone() == ("30s",)


def test_its_claim_walks_the_unpublished_index_in_order(relay_session_options):
    claim = relay.SQL["claim_unpublished"]
    params = {"confirmed": [uuid.uuid4()], "claim": 30.0, "limit": 200, "traced": False}
    with psycopg.connect(database_conninfo()) as session:
        plan = "\n".join(row[0] for row in session.execute(f"EXPLAIN {claim}", params).fetchall())
        session.rollback()

    assert "Index Scan using outbox_unpublished_idx" in plan
    assert "Bitmap" not in plan
