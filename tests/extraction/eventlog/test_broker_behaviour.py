"""The Kafka client and broker behaviours the event log (config/kafka.py) relies on, pinned on a
real Kafka-protocol broker (Tansu, tests/kafka_broker.py) with confluent-kafka: idempotent keyed
delivery, explicit offset commits, pause without leaving the group, independent groups, reading
from a point in time, and rebalancing. Each test uses its own topic and fresh group ids."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from tests.kafka_broker import fresh_group

# The whole file runs for about 40 s: every group join costs about session.timeout.ms / 2.
pytestmark = pytest.mark.slow

SESSION_TIMEOUT_MS = 6000
GROUP_SETTINGS = {
    "session.timeout.ms": SESSION_TIMEOUT_MS,
    "heartbeat.interval.ms": 1000,
    "enable.auto.commit": False,
    "enable.auto.offset.store": False,
    "auto.offset.reset": "earliest",
    "fetch.wait.max.ms": 100,
}
# Tansu answers a JoinGroup after about session.timeout.ms / 2: generous, still bounded.
JOIN_TIMEOUT = 15.0


def topic_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def consumer(broker, group: str, **overrides) -> Consumer:
    return Consumer(broker.config(**{"group.id": group, **GROUP_SETTINGS, **overrides}))


def produce(broker, topic: str, records, **overrides) -> list[tuple[bytes, bytes, int, int]]:
    """Send ``(key, value)`` records (or ``(key, value, headers)``) from an idempotent producer;
    the delivery reports as ``(key, value, partition, offset)``, in the order they arrived
    (per partition batch, not the order produced)."""
    producer = Producer(broker.config(**{"enable.idempotence": True, "acks": "all", "linger.ms": 20, **overrides}))
    reports: list = []

    def on_delivery(err, msg):
        reports.append((err, msg.key(), msg.value(), msg.partition(), msg.offset()))

    for record in records:
        key, value, *headers = record
        producer.produce(topic, key=key, value=value, headers=headers[0] if headers else None, on_delivery=on_delivery)
    assert producer.flush(10) == 0
    assert [report[0] for report in reports] == [None] * len(records)
    return [report[1:] for report in reports]


def poll_until(consumers, condition, timeout: float, interval: float = 0.1) -> list:
    """Poll every consumer in turn until ``condition()`` holds; the messages they returned."""
    messages = []
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        for c in consumers:
            message = c.poll(interval)
            if message is None:
                continue
            assert message.error() is None, message.error()
            messages.append(message)
    return messages


def consume(c: Consumer, count: int, timeout: float = JOIN_TIMEOUT) -> list:
    messages: list = []
    deadline = time.monotonic() + timeout
    while len(messages) < count:
        assert time.monotonic() < deadline, f"only {len(messages)} of {count} records arrived"
        message = c.poll(0.1)
        if message is None:
            continue
        assert message.error() is None, message.error()
        messages.append(message)
    return messages


def test_idempotent_producer_delivers_keyed_records_with_headers_in_order(kafka_broker):
    topic = kafka_broker.create_topic(topic_name("keyed"), partitions=4)
    records = []
    for i in range(5):
        records.append((b"job-1", f"one-{i}".encode(), [("event_id", f"e1-{i}".encode())]))
        records.append((b"job-2", f"two-{i}".encode(), [("event_id", f"e2-{i}".encode())]))

    reports = produce(kafka_broker, topic, records)

    by_key: dict[bytes, list[tuple[int, int]]] = {}
    for key, value, partition, offset in reports:
        by_key.setdefault(key, []).append((value, partition, offset))
    assert sorted(by_key) == [b"job-1", b"job-2"]
    for key, key_reports in by_key.items():
        # One partition per key, the records in the order produced at increasing offsets.
        assert len({partition for _, partition, _ in key_reports}) == 1, (key, key_reports)
        prefix = "one" if key == b"job-1" else "two"
        assert [value for value, _, _ in key_reports] == [f"{prefix}-{i}".encode() for i in range(5)]
        offsets = [offset for _, _, offset in key_reports]
        assert offsets == sorted(offsets) and len(set(offsets)) == 5 and offsets[0] >= 0, (key, offsets)

    # Reading each key's partition back gives its records in order, with their headers.
    reader = consumer(kafka_broker, fresh_group("keyed-read"))
    try:
        partitions = sorted({partition for _, _, partition, _ in reports})
        reader.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        got = consume(reader, len(records))
        for key in (b"job-1", b"job-2"):
            mine = [m for m in got if m.key() == key]
            prefix, n = ("one", 1) if key == b"job-1" else ("two", 2)
            assert [m.value() for m in mine] == [f"{prefix}-{i}".encode() for i in range(5)]
            assert [m.headers() for m in mine] == [[("event_id", f"e{n}-{i}".encode())] for i in range(5)]
            assert [(m.value(), m.partition(), m.offset()) for m in mine] == by_key[key]
    finally:
        reader.close()


def test_high_watermark_comes_from_fetch_not_list_offsets(kafka_broker):
    """Tansu's ListOffsets(latest) answers the last batch's base offset + 1: with one batch of
    five records that is 1, while the next offset is 5. The Fetch high watermark is right."""
    topic = kafka_broker.create_topic(topic_name("watermark"))
    reports = produce(kafka_broker, topic, [(b"k", str(i).encode()) for i in range(5)], **{"linger.ms": 200})
    assert [(partition, offset) for _, _, partition, offset in reports] == [(0, i) for i in range(5)]

    assert kafka_broker.high_watermark(topic, 0) == 5
    probe = consumer(kafka_broker, fresh_group("watermark"))
    try:
        listed = probe.get_watermark_offsets(TopicPartition(topic, 0), timeout=5, cached=False)
    finally:
        probe.close()
    assert listed == (0, 1)  # the quirk; if this fails, Tansu fixed ListOffsets
    empty = kafka_broker.create_topic(topic_name("watermark-empty"))
    assert kafka_broker.high_watermark(empty, 0) == 0


def test_explicit_commit_is_where_the_next_member_of_the_group_starts(kafka_broker):
    topic = kafka_broker.create_topic(topic_name("commit"))
    produce(kafka_broker, topic, [(b"k", str(i).encode()) for i in range(6)])
    group = fresh_group("commit")
    assert kafka_broker.committed(group, topic, 0) is None

    first = consumer(kafka_broker, group)
    try:
        first.subscribe([topic])
        got = consume(first, 6)
        assert [m.offset() for m in got] == list(range(6))
        # Nothing auto-commits: the group has no offset until the explicit commit.
        assert kafka_broker.committed(group, topic, 0) is None
        result = first.commit(offsets=[TopicPartition(topic, 0, 4)], asynchronous=False)
        assert [(tp.partition, tp.offset, tp.error) for tp in result] == [(0, 4, None)]
        assert [tp.offset for tp in first.committed([TopicPartition(topic, 0)], timeout=5)] == [4]
    finally:
        first.close()
    assert kafka_broker.committed(group, topic, 0) == 4

    second = consumer(kafka_broker, group)
    try:
        second.subscribe([topic])
        got = consume(second, 2)
        assert [(m.offset(), m.value()) for m in got] == [(4, b"4"), (5, b"5")]
    finally:
        second.close()


def test_paused_consumer_stays_in_its_group_past_max_poll_interval(kafka_broker):
    max_poll_interval_ms = SESSION_TIMEOUT_MS
    topic = kafka_broker.create_topic(topic_name("pause"))
    produce(kafka_broker, topic, [(b"k", str(i).encode()) for i in range(3)])
    group = fresh_group("pause")
    revoked: list = []
    c = consumer(kafka_broker, group, **{"max.poll.interval.ms": max_poll_interval_ms})
    try:
        c.subscribe([topic], on_revoke=lambda _c, parts: revoked.append(parts))
        assert [m.offset() for m in consume(c, 2)] == [0, 1]
        assignment = c.assignment()
        assert [(tp.topic, tp.partition) for tp in assignment] == [(topic, 0)]
        c.pause(assignment)
        produce(kafka_broker, topic, [(b"k", str(i).encode()) for i in range(3, 6)])

        deadline = time.monotonic() + 1.5 * max_poll_interval_ms / 1000
        while time.monotonic() < deadline:
            assert c.poll(0.2) is None  # neither a record nor an error (no max-poll, no fencing)

        assert revoked == []
        assert [(tp.topic, tp.partition) for tp in c.assignment()] == [(topic, 0)]
        # Still the group's member of the same generation: a stale one would be refused.
        result = c.commit(offsets=[TopicPartition(topic, 0, 2)], asynchronous=False)
        assert [(tp.offset, tp.error) for tp in result] == [(2, None)]

        c.resume(assignment)
        got = consume(c, 4, timeout=10)
        assert [(m.offset(), m.value()) for m in got] == [(i, str(i).encode()) for i in range(2, 6)]
        assert revoked == []
    finally:
        c.close()
    assert kafka_broker.committed(group, topic, 0) == 2


def test_second_group_reads_everything_without_moving_the_first_groups_offset(kafka_broker):
    topic = kafka_broker.create_topic(topic_name("groups"))
    produce(kafka_broker, topic, [(b"k", str(i).encode()) for i in range(5)])
    first_group, second_group = fresh_group("first"), fresh_group("second")

    first = consumer(kafka_broker, first_group)
    try:
        first.subscribe([topic])
        consume(first, 3)
        first.commit(offsets=[TopicPartition(topic, 0, 3)], asynchronous=False)
    finally:
        first.close()

    second = consumer(kafka_broker, second_group)
    try:
        second.subscribe([topic])
        got = consume(second, 5)
        assert [m.offset() for m in got] == list(range(5))
        second.commit(offsets=[TopicPartition(topic, 0, 5)], asynchronous=False)
    finally:
        second.close()

    assert kafka_broker.committed(first_group, topic, 0) == 3
    assert kafka_broker.committed(second_group, topic, 0) == 5


def test_reading_from_a_point_in_time_filters_on_the_record_timestamp(kafka_broker):
    """``offsets_for_times`` is not exact on Tansu: it resolves per batch (a time inside a
    batch answers the batch's first offset) and answers 0, not the end, for a time after the
    last record. The workaround, tested here: read from the earliest offset (or from the
    ``offsets_for_times`` answer, which is never later than the right one) up to the high
    watermark and keep the records whose own timestamp is at or after the time asked for."""
    topic = kafka_broker.create_topic(topic_name("time"))
    base = int(time.time() * 1000) - 60_000
    producer = Producer(kafka_broker.config(**{"enable.idempotence": True, "acks": "all", "linger.ms": 200}))
    for i in range(6):  # one batch, one second apart in record time
        producer.produce(topic, key=b"k", value=str(i).encode(), timestamp=base + i * 1000)
    assert producer.flush(10) == 0
    since = base + 3000

    reader = consumer(kafka_broker, fresh_group("time"))
    try:
        (answer,) = reader.offsets_for_times([TopicPartition(topic, 0, since)], timeout=5)
        assert 0 <= answer.offset <= 3  # a lower bound, not the exact 3
        (after_end,) = reader.offsets_for_times([TopicPartition(topic, 0, base + 60_000)], timeout=5)
        assert after_end.offset <= 6

        high = kafka_broker.high_watermark(topic, 0)
        assert high == 6
        reader.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        got = consume(reader, high)
        assert [m.timestamp()[1] - base for m in got] == [i * 1000 for i in range(6)]
        kept = [m for m in got if m.timestamp()[1] >= since]
        assert [(m.offset(), m.value()) for m in kept] == [(3, b"3"), (4, b"4"), (5, b"5")]
    finally:
        reader.close()


def test_rebalance_splits_partitions_and_gives_them_back(kafka_broker):
    """Measured with these settings: the first join about 3 s, the split after a second member
    subscribes about 5 s, all four back to the survivor about 4 s after the other closes."""
    topic = kafka_broker.create_topic(topic_name("rebalance"), partitions=4)
    group = fresh_group("rebalance")
    events: dict[str, list] = {"a": [], "b": []}

    def callbacks(name):
        def on_assign(_c, parts):
            events[name].append(("assign", sorted(tp.partition for tp in parts)))

        def on_revoke(_c, parts):
            events[name].append(("revoke", sorted(tp.partition for tp in parts)))

        return {"on_assign": on_assign, "on_revoke": on_revoke}

    def owned(c):
        return sorted(tp.partition for tp in c.assignment())

    a = consumer(kafka_broker, group)
    b = consumer(kafka_broker, group)
    try:
        a.subscribe([topic], **callbacks("a"))
        poll_until([a], lambda: owned(a) == [0, 1, 2, 3], JOIN_TIMEOUT)
        assert events["a"] == [("assign", [0, 1, 2, 3])]

        b.subscribe([topic], **callbacks("b"))
        poll_until([a, b], lambda: len(owned(a)) == 2 and len(owned(b)) == 2, 2 * JOIN_TIMEOUT)
        assert sorted(owned(a) + owned(b)) == [0, 1, 2, 3]
        assert events["a"][1] == ("revoke", [0, 1, 2, 3])  # eager: all back, then the split
        assert events["a"][-1] == ("assign", owned(a))
        assert events["b"] == [("assign", owned(b))]

        b_owned = owned(b)
        b.close()
        b = None
        assert events["b"][-1] == ("revoke", b_owned)
        poll_until([a], lambda: owned(a) == [0, 1, 2, 3], 2 * JOIN_TIMEOUT)
        assert events["a"][-1] == ("assign", [0, 1, 2, 3])
    finally:
        a.close()
        if b is not None:
            b.close()
