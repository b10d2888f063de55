"""Publishing the requested event right after the accept's COMMIT (extraction.outbox.after_commit)
on real PostgreSQL and a RabbitMQ vhost of the test's own, with the relay as the fallback: the
row is written claimed for the accepting process, which publishes and marks it; a row it could
not publish stays the relay's once the claim lapses; and such a row wakes no relay."""

from __future__ import annotations

import socket
import subprocess
import time
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from django.db import connection
from kombu import Connection

from config.db import database_conninfo
from config.topology import INGRESS
from extraction.models import OutboxEvent
from extraction.outbox import after_commit
from extraction.outbox.relay import claim_unpublished
from tests.factories import submit
from tests.system import ensure_vhost

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def vhost_url() -> Iterator[str]:
    name = f"after_commit_{uuid.uuid4().hex[:8]}"
    try:
        yield ensure_vhost(name)
    finally:
        subprocess.run(["rabbitmqctl", "delete_vhost", name], capture_output=True, check=False)


@pytest.fixture
def publishing(settings, monkeypatch):
    """Publishing after commit on, through a publisher of the test's own on ``broker_url``."""
    settings.OUTBOX_PUBLISH_AFTER_COMMIT = True
    settings.OUTBOX_AFTER_COMMIT_CLAIM_SECONDS = 5.0

    made: list[after_commit.AfterCommitPublisher] = []

    def use(broker_url: str) -> after_commit.AfterCommitPublisher:
        publisher = after_commit.AfterCommitPublisher(broker_url=broker_url)
        monkeypatch.setattr(after_commit, "_publisher", publisher)
        made.append(publisher)
        return publisher

    yield use
    for publisher in made:
        publisher.stop()


def _requested(job_id: str) -> OutboxEvent:
    return OutboxEvent.objects.get(job_id=job_id, event_type="extraction.requested.v1")


def _until(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "not within the timeout"
        time.sleep(0.02)


def test_the_accepting_process_publishes_the_requested_event_itself_and_marks_it(tenant, vhost_url, publishing):
    publisher = publishing(vhost_url)

    job_id = submit(tenant)

    _until(lambda: _requested(job_id).published_at is not None)
    row = _requested(job_id)
    assert (row.claimed_until, publisher.published) == (None, 1)
    with Connection(vhost_url) as conn:
        message = conn.default_channel.basic_get(INGRESS, no_ack=True)
    assert message is not None and message.headers["id"] == str(row.event_id)
    assert claim_unpublished(batch_size=10, claim_seconds=5.0) == []  # nothing left for the relay


def test_a_row_it_cannot_publish_is_the_relays_once_its_claim_lapses(tenant, publishing):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    publisher = publishing(f"amqp://guest:guest@127.0.0.1:{closed_port}//")

    first = submit(tenant)
    _until(lambda: publisher._paused_until > 0)
    second = submit(tenant)  # while paused: not even queued

    rows = [_requested(first), _requested(second)]
    assert [(row.published_at, row.claimed_until is not None) for row in rows] == [(None, True), (None, True)]
    assert publisher._rows.qsize() == 0
    # Claimed for the accepting process: the relay leaves them until the claim lapses...
    assert claim_unpublished(batch_size=10, claim_seconds=5.0) == []
    OutboxEvent.objects.filter(job_id__in=[first, second]).update(claimed_until=None)
    # ...and then publishes them as any other row.
    claimed = claim_unpublished(batch_size=10, claim_seconds=5.0)
    assert sorted(str(row.job_id) for row in claimed) == sorted([first, second])


def test_rows_written_claimed_wake_no_relay_and_the_others_do(tenant, publishing, settings, vhost_url):
    publishing(vhost_url)
    with psycopg.connect(database_conninfo(), autocommit=True) as listener:
        listener.execute("LISTEN outbox_events")

        def notified() -> bool:
            return bool(list(listener.notifies(timeout=1.0, stop_after=1)))

        submit(tenant)
        assert not notified()
        settings.OUTBOX_PUBLISH_AFTER_COMMIT = False
        job_id = submit(tenant)
        assert notified()
    assert _requested(job_id).claimed_until is None


def test_off_or_on_kafka_the_accept_leaves_the_row_to_the_relay(tenant, settings):
    settings.OUTBOX_PUBLISH_AFTER_COMMIT = True
    settings.EVENT_TRANSPORT = "kafka"
    assert after_commit.claim_seconds() is None
    settings.EVENT_TRANSPORT = "rabbitmq"
    settings.OUTBOX_PUBLISH_AFTER_COMMIT = False
    assert after_commit.claim_seconds() is None

    job_id = submit(tenant)

    assert _requested(job_id).claimed_until is None
    assert [str(row.job_id) for row in claim_unpublished(batch_size=10, claim_seconds=5.0)] == [job_id]
    assert connection.is_usable()
