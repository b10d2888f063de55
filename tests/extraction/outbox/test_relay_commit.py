"""The relay's claim commits without waiting for the WAL flush, for its own transaction only
(#25 point 6): losing it in a crash re-sends rows the consumers deduplicate, and a pooler's next
client must never inherit the setting."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from extraction.outbox.relay import claim_unpublished

pytestmark = pytest.mark.django_db(transaction=True)


def _synchronous_commit() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        return cursor.fetchone()[0]


def test_the_claim_sets_asynchronous_commit_for_its_transaction_only():
    assert _synchronous_commit() == "on"
    with transaction.atomic():
        assert claim_unpublished(batch_size=10, claim_seconds=5.0) == []  # nothing to claim: still set
        assert _synchronous_commit() == "off"
    assert _synchronous_commit() == "on"  # the session's setting is untouched after COMMIT
