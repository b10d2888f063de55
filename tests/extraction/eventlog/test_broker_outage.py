"""The Kafka broker goes away and comes back (empty: Tansu's memory storage) while the relay and
the ingress consumer run: neither exits, publishing waits, and the job accepted during the
outage is published, taken in from a record and finished once the broker is back."""

from __future__ import annotations

import time

import pytest

from extraction.models import ExecutionInbox, ExtractionJob, OutboxEvent
from tests.extraction.eventlog.conftest import event_log_for, kafka_system
from tests.extraction.eventlog.test_pipeline import consumer, taken_in_from_a_record
from tests.factories import submit
from tests.kafka_broker import KafkaBroker
from tests.system import all_terminal, wait_for

pytestmark = pytest.mark.slow


@pytest.fixture
def own_broker():
    with KafkaBroker() as broker:
        yield broker


def test_relay_and_ingress_survive_the_broker_s_loss_and_return(
    transactional_db, broker, sim, settings, tmp_path, tenant, own_broker
):
    event_log = event_log_for(own_broker, settings, partitions=1)
    processes = kafka_system(event_log, broker=broker, sim=sim, settings=settings, log_dir=tmp_path)
    try:
        processes.relay()
        consumer(processes, "ingress")
        processes.celery("workers", "llm")
        processes.scheduler()
        before = submit(tenant)
        wait_for(lambda: all_terminal([before]), timeout=60, message=processes.logs)

        own_broker.stop()
        during = submit(tenant)
        time.sleep(5)
        assert {name: proc.poll() for name, proc in processes.procs.items()} == dict.fromkeys(processes.procs)
        assert OutboxEvent.objects.get(job_id=during, event_type="extraction.requested.v1").published_at is None
        assert ExtractionJob.objects.get(pk=during).state == "ACCEPTED"

        own_broker.start()  # same port, no topics, no committed offsets
        wait_for(lambda: all_terminal([during]), timeout=120, message=processes.logs)
        assert taken_in_from_a_record(during)
        assert ExtractionJob.objects.get(pk=during).state == "SUCCEEDED"
        assert ExecutionInbox.objects.filter(job_id__in=[before, during]).count() == 2
        assert {name: proc.poll() for name, proc in processes.procs.items()} == dict.fromkeys(processes.procs)
    finally:
        processes.stop_all()
