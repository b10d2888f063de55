"""Redis failover under load: the limiter, the cache and the Channels layer behind three
Sentinels (``REDIS_SENTINELS``), the master killed with ``kill -9`` mid-load.

What must hold: the limiter recovers (calls resume under the pool's in-flight limit), its
admission overshoots the limit by no more than docs/scaling-and-failover.md states while the
new master lacks the old one's last writes, a browser's WebSocket keeps getting notices (every job's last transition
reaches it), every accepted job ends terminal with one result, and no process exits.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from config.db import database_conninfo
from tests.cluster.scenario import (
    SERVICE_PROCESSES,
    Load,
    Pipeline,
    assert_invariants,
    check_invariants,
    free_port,
    log_lines,
    pipeline_env,
    settle,
)
from tests.system import VENV_BIN, SystemProcesses, serves_health, system_env, wait_for

pytestmark = pytest.mark.slow

RATE = 4.0
LOAD_SECONDS = 40.0
KILL_AT = 12.0
IN_FLIGHT_LIMIT = 4
# docs/scaling-and-failover.md: how far admission may overshoot the in-flight limit while
# a new Redis master lacks the permits the old one held (asynchronous replication).
OVERSHOOT_BOUND = IN_FLIGHT_LIMIT


class NoticeWatcher:
    """A browser's view: one WebSocket to the ws process, subscribed to all of the tenant's jobs;
    the highest state_version seen per job, and when each notice came."""

    def __init__(self, port: int, token: str) -> None:
        self.url = f"ws://127.0.0.1:{port}/ws/jobs/"
        self.token = token
        self.versions: dict[str, int] = {}
        self.received_at: list[float] = []
        self.closed_with: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._watch()), daemon=True)

    def start(self) -> NoticeWatcher:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=15)

    async def _watch(self) -> None:
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(
                self.url, protocols=("jobs.v1", f"token.{self.token}"), headers={"Origin": "http://localhost"}
            ) as socket:
                await socket.send_json({"type": "subscribe", "job_id": None, "cursor": None})
                while not self._stop.is_set():
                    try:
                        message = await socket.receive(timeout=0.5)
                    except TimeoutError:
                        continue
                    if message.type != aiohttp.WSMsgType.TEXT:
                        self.closed_with = socket.close_code
                        return
                    frame: dict[str, Any] = json.loads(message.data)
                    if frame.get("type") == "job.changed":
                        job = str(frame["job_id"])
                        self.versions[job] = max(self.versions.get(job, 0), int(frame["state_version"]))
                        self.received_at.append(time.time())


def test_the_redis_master_killed_under_load(redis_sentinel, broker, simulator, settings, transactional_db, tmp_path):
    simulator.control(latency_mean_seconds=1.0, latency_p95_seconds=0.0)
    env = pipeline_env(
        system_env(broker_url=broker, simulator_url=simulator.base_url, media_root=Path(settings.MEDIA_ROOT)),
        simulator=simulator,
        REDIS_SENTINELS=redis_sentinel.sentinels_setting(),
        REDIS_SENTINEL_MASTER=redis_sentinel.master_name,
        REDIS_URL="redis://127.0.0.1:6379/5",  # its database number; the host is the Sentinels' master
        CHANNELS_REDIS_URL="redis://127.0.0.1:6379/6",
        CAPACITY_FAIL_MODE="closed",
        POOL_MAX_IN_FLIGHT=str(IN_FLIGHT_LIMIT),
        POOL_REQUESTS_PER_MINUTE="6000",
        NOTIFY_CATCHUP_SECONDS="5",
    )
    processes = SystemProcesses(env=env, log_dir=tmp_path)
    pipeline = Pipeline(processes, dsn=database_conninfo(), web_port=free_port())
    ws_port = free_port()
    watcher: NoticeWatcher | None = None
    try:
        pipeline.start_web()
        pipeline.start_services()
        processes.start(
            "ws", [str(VENV_BIN / "daphne"), "-b", "127.0.0.1", "-p", str(ws_port), "config.asgi:application"]
        )
        pipeline.wait_ready()
        pipeline.create_tenant()
        pipeline.connect_erp()
        wait_for(lambda: serves_health(ws_port), timeout=60, message=processes.logs)
        watcher = NoticeWatcher(ws_port, pipeline.token).start()

        load = Load(pipeline, rate=RATE, seconds=LOAD_SECONDS).start()
        time.sleep(KILL_AT)
        peak_before = simulator.stats()["concurrency"]["peak"]
        old = redis_sentinel.kill_master()
        killed_at = time.time()
        new = redis_sentinel.wait_new_master(old)
        failover_seconds = time.time() - killed_at
        load.finish()
        accepted = load.accepted
        settle(pipeline, accepted)
        final_versions = dict(
            pipeline.query(
                "SELECT id::text, state_version FROM extraction_jobs WHERE tenant_id = %s", [pipeline.tenant_id]
            )
        )
        # Every job's last transition reaches the browser, live or by the stream's catch-up.
        wait_for(
            lambda: all(watcher.versions.get(job, 0) >= v for job, v in final_versions.items()),
            timeout=60,
            message=lambda: (
                f"notices missing for {sum(watcher.versions.get(j, 0) < v for j, v in final_versions.items())} jobs"
            ),
        )
        after_failover = sum(1 for t in watcher.received_at if t > killed_at + failover_seconds)
        violations = check_invariants(pipeline, accepted, calls_by_job=simulator.stats()["calls_by_job"], erp=True)
        peak = simulator.stats()["concurrency"]["peak"]
        logged = log_lines(tmp_path, (*SERVICE_PROCESSES, "ws"))
        exited = pipeline.exited()
        print(
            f"\nRedis failover: {len(load.submissions)} submitted, {len(accepted)} accepted; master {old} killed at "
            f"t={KILL_AT:g} s, {new} master after {failover_seconds:.1f} s; model calls in flight: peak {peak_before} "
            f"before, {peak} overall (limit {IN_FLIGHT_LIMIT}, overshoot {max(0, peak - IN_FLIGHT_LIMIT)}); "
            f"{len(watcher.received_at)} notices, {after_failover} after the failover; logs {logged}; "
            f"violations {sum(map(len, violations.values()))}"
        )
    finally:
        if watcher is not None:
            watcher.stop()
        processes.stop_all()

    assert exited == {}
    assert_invariants(violations)
    assert peak_before <= IN_FLIGHT_LIMIT  # the limiter held before the fault
    assert peak - IN_FLIGHT_LIMIT <= OVERSHOOT_BOUND
    assert after_failover > 0 and watcher.closed_with is None
    assert {name: counts["tracebacks"] for name, counts in logged.items()} == dict.fromkeys(
        (*SERVICE_PROCESSES, "ws"), 0
    )
