"""The notifier process: committed job_events rows become job.changed messages on the real
channels-redis layer, woken by LISTEN/NOTIFY, without losing an event that commits after a
higher id was already forwarded."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
import redis
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.db import connections

from config.db import database_conninfo
from extraction.models import JobEvent
from extraction.notify.listeners import job_group, tenant_group
from extraction.notify.notifier import Notifier
from tests.factories import submit
from tests.system import ROOT

pytestmark = [pytest.mark.anyio]


async def wait_until(condition, timeout: float, message: str) -> None:
    deadline = time.monotonic() + timeout
    while not await condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {message}")
        await asyncio.sleep(0.05)


async def notifier_is_listening() -> bool:
    def count() -> int:
        with psycopg.connect(database_conninfo(), autocommit=True) as conn:
            return conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'notifier-listen'"
                " AND datname = current_database()"
            ).fetchone()[0]

    return await asyncio.to_thread(count) > 0


def start_notifier(log_path: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "DJANGO_DEVELOPMENT": "1", "POSTGRES_DB": connections["default"].settings_dict["NAME"]}
    with log_path.open("wb") as log:
        return subprocess.Popen(
            [sys.executable, "manage.py", "run_notifier", *args],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


@pytest.mark.slow  # the notifier as a real process, stopped with a signal
async def test_notifier_process_forwards_a_commit_within_moments_via_listen(tenant_a, tmp_path):
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(tenant_group(tenant_a.tenant.pk), channel)
    # A 60 s fallback poll: only the NOTIFY can explain a notice within a second or two.
    proc = start_notifier(tmp_path / "notifier.log", "--poll", "60")
    try:
        await wait_until(notifier_is_listening, 20, "the notifier to LISTEN")
        job = await database_sync_to_async(submit)(tenant_a)
        started = time.monotonic()
        message = await asyncio.wait_for(layer.receive(channel), timeout=5)
        assert time.monotonic() - started < 2
        event_id = await database_sync_to_async(lambda: JobEvent.objects.get(job_id=job).pk)()
        assert message == {
            "type": "job.changed",
            "event_id": event_id,
            "job_id": job,
            "tenant_id": str(tenant_a.tenant.pk),
            "state_version": 1,
            "state": "ACCEPTED",
        }
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        exit_code = proc.wait(timeout=10)
        await layer.group_discard(tenant_group(tenant_a.tenant.pk), channel)
    assert exit_code == 0, (tmp_path / "notifier.log").read_text()


async def test_event_committed_after_a_higher_id_is_still_forwarded(tenant_a):
    """Ids are taken at INSERT: the lower one can commit last. The notifier remembers the gap."""
    job = await database_sync_to_async(submit)(tenant_a)
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(job_group(job), channel)
    # One receive for the whole test: a receive cancelled by a timeout is a consumer leaving,
    # and the pub/sub layer unsubscribes its channel then.
    received: asyncio.Queue = asyncio.Queue()

    async def pump() -> None:
        while True:
            await received.put(await layer.receive(channel))

    pumping = asyncio.create_task(pump())
    notifier = Notifier(poll_interval=0.1)
    insert = (
        "INSERT INTO job_events (job_id, tenant_id, state_version, from_state, to_state, reason, detail,"
        " created_at) VALUES (%s, %s, %s, '', 'READY', 'test', '{}', now()) RETURNING id"
    )
    try:
        await notifier.forward_new_events()
        while True:  # drain what the first pass re-sent (the accept event)
            try:
                await asyncio.wait_for(received.get(), timeout=0.3)
            except TimeoutError:
                break
        async with (
            await psycopg.AsyncConnection.connect(database_conninfo()) as slow,
            await psycopg.AsyncConnection.connect(database_conninfo(), autocommit=True) as fast,
        ):
            (low_id,) = await (await slow.execute(insert, [job, tenant_a.tenant.pk, 101])).fetchone()
            (high_id,) = await (await fast.execute(insert, [job, tenant_a.tenant.pk, 102])).fetchone()
            assert low_id < high_id
            assert await notifier.forward_new_events() == 1
            first = await asyncio.wait_for(received.get(), timeout=5)
            assert first["event_id"] == high_id
            await slow.commit()
        assert await notifier.forward_new_events() == 1
        second = await asyncio.wait_for(received.get(), timeout=5)
        assert (second["event_id"], second["state_version"]) == (low_id, 101)
        assert await notifier.forward_new_events() == 0  # each event once per notifier
    finally:
        pumping.cancel()
        await notifier.close()
        await layer.group_discard(job_group(job), channel)


async def test_a_restarted_notifier_resends_the_last_seconds(tenant_a):
    """A notifier that was down for a moment does not skip what committed meanwhile."""
    job = await database_sync_to_async(submit)(tenant_a)
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(job_group(job), channel)
    notifier = Notifier(poll_interval=0.1)
    try:
        assert await notifier.forward_new_events() == 1  # the job's ACCEPTED event, committed before the start
        message = await asyncio.wait_for(layer.receive(channel), timeout=5)
        assert (message["job_id"], message["state_version"]) == (job, 1)
    finally:
        await notifier.close()
        await layer.group_discard(job_group(job), channel)


class LayerThatFailsOnce:
    """The real channel layer, except that one group_send raises as it would with Redis gone."""

    def __init__(self, layer, fail_on_call: int) -> None:
        self.layer = layer
        self.calls = 0
        self.fail_on_call = fail_on_call

    async def group_send(self, group: str, message: dict) -> None:
        self.calls += 1
        if self.calls == self.fail_on_call:
            raise redis.ConnectionError("Connection refused")
        await self.layer.group_send(group, message)


async def test_an_event_the_layer_refused_is_forwarded_on_the_retry(tenant_a):
    """A send that fails mid-batch leaves that event, and the ones after it, for the next step."""
    jobs = [await database_sync_to_async(submit)(tenant_a) for _ in range(3)]
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(tenant_group(tenant_a.tenant.pk), channel)
    # Each notice is two sends (tenant group, job group): the third is the second job's.
    notifier = Notifier(poll_interval=0.1, channel_layer=LayerThatFailsOnce(layer, fail_on_call=3))
    try:
        with pytest.raises(redis.ConnectionError):
            await notifier.forward_new_events()
        assert await notifier.forward_new_events() == 2
        received = [await asyncio.wait_for(layer.receive(channel), timeout=5) for _ in range(3)]
        assert [m["job_id"] for m in received] == jobs
        assert await notifier.forward_new_events() == 0
    finally:
        await notifier.close()
        await layer.group_discard(tenant_group(tenant_a.tenant.pk), channel)
