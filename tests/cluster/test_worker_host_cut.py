"""A worker host cut off: two llm workers on two "hosts" (network namespaces on a bridge of the
test's own), the rest of the Procfile in the root namespace, an open-loop load of sample
invoices; host B's link goes down for clearly longer than the lease, then comes back.

What must hold, each with one right answer:

- the jobs B held at the cut are reaped (fence+1) and finish on host A under the new fence;
- B's late completions after the restore are refused: ``stale_completion`` in the ledger under
  B's worker, no result written under B's fences;
- B's limiter permits expire while it is cut: the pool stops counting them within their TTL;
- nothing reaches the ERP twice, every accepted job is terminal, model calls <= attempts;
- no process exits: B's worker survives the cut and claims and completes again after it.

Every engine (PostgreSQL, RabbitMQ, Redis) and the provider simulator stays where it is, on
loopback in the root namespace; the hosts reach them through forwarders on the bridge's address
(tests/cluster/netns.py). A cut therefore looks to an engine like a silent client behind a live
socket, as it would behind a real partition until the engine's own timeouts notice.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from accounts.models import Tenant
from config.db import database_conninfo
from extraction.capacity import limiter
from tests.cluster.hosts import namespace_env, run_on_host
from tests.cluster.netns import Host, Network
from tests.cluster.scenario import (
    Load,
    Pipeline,
    assert_invariants,
    check_invariants,
    free_port,
    log_lines,
    pipeline_env,
    settle,
)
from tests.system import (
    ROOT,
    VENV_BIN,
    SystemProcesses,
    celery_args,
    connect_reference_erp,
    stop_process_groups,
    system_env,
    wait_for,
)

pytestmark = pytest.mark.slow

POOL = "default"
RATE = 2.0  # submissions per second
LOAD_SECONDS = 60.0
CUT_NOT_BEFORE = 12.0  # seconds into the load: both hosts are busy by then
CUT_SECONDS = 14.0
# Slots per worker: host A alone carries the load and B's jobs with room to spare (8 / 2 s =
# 4 jobs/s, twice RATE), so what B held is claimed again on A well before B returns.
CONCURRENCY = 8
LATENCY = {"latency_mean_seconds": 2.0, "latency_p95_seconds": 3.0}
LEASE_SECONDS = 5.0
PERMIT_TTL_SECONDS = 8.0
CLOCKS = {
    "LEASE_SECONDS": str(LEASE_SECONDS),
    "HEARTBEAT_SECONDS": "1",
    # Longer than the cut and TCP's retransmission after it: B's calls sent before the cut are
    # still waiting for their answers when it comes back, so its completions arrive late.
    "ATTEMPT_TIMEOUT_SECONDS": "45",
    # Longer than any call here, shorter than the cut: B's permits must come back by expiring.
    "CAPACITY_PERMIT_TTL_SECONDS": str(PERMIT_TTL_SECONDS),
    # The self-audit would hand B's permits back once their jobs were reaped; it is kept out
    # of the cut so that the TTL alone is what is shown (the audit has tests of its own).
    "AUDIT_INTERVAL_SECONDS": "3600",
}
SERVICES = ("web", "relay", "ingress", "delivery", "scheduler")


# --- the hosts ---------------------------------------------------------------------------------------


def start_host_worker(host: Host, env: Mapping[str, str], log: Path) -> subprocess.Popen[Any]:
    """The Procfile's llm worker on ``host``, named by the host (its worker id says which
    host claimed a job)."""
    argv = [str(VENV_BIN / "celery"), *celery_args(f"llm-{host.name}", "llm", CONCURRENCY)]
    return run_on_host(host, argv, {**env, "POSTGRES_POOL_MAX_SIZE": "8"}, log=log, cwd=ROOT)


# --- what the test reads ------------------------------------------------------------------------------


def worker_id_on(pipeline: Pipeline, host: str) -> str | None:
    """The worker id of the one llm worker process on ``host``, once it has claimed a job."""
    ids = [
        row[0]
        for row in pipeline.query(
            "SELECT DISTINCT worker_id FROM extraction_attempts WHERE worker_id LIKE %s", [f"{host}:%"]
        )
    ]
    assert len(ids) <= 1, ids
    return ids[0] if ids else None


def both_claimed(pipeline: Pipeline) -> tuple[str, str] | None:
    """(host A's worker id, host B's) once each has claimed a job."""
    a, b = worker_id_on(pipeline, "hostA"), worker_id_on(pipeline, "hostB")
    return (a, b) if a and b else None


def running_under(pipeline: Pipeline, worker_id: str) -> set[tuple[str, int]]:
    """(job, fence) of the jobs RUNNING under ``worker_id``'s lease."""
    return {
        (job, int(fence))
        for job, fence in pipeline.query(
            "SELECT id::text, fence FROM extraction_jobs WHERE state = 'RUNNING' AND lease_owner = %s", [worker_id]
        )
    }


def permits_of(claims: set[tuple[str, int]]) -> dict[str, float]:
    """The pool's unexpired in-flight permits held for these claims: holder (job:fence) ->
    seconds until the permit expires, by Redis's clock."""
    held = limiter.held_permits(POOL)
    assert held is not None, "Redis unreachable"
    holders = {f"{job}:{fence}" for job, fence in claims}
    return {permit.holder: permit.expires_in_seconds for permit in held if permit.holder in holders}


def leaked_or_reclaimed() -> int:
    """Permits the pool stopped counting because they expired: past their TTL, and those an
    acquire has since taken back."""
    counts = limiter.permit_counts(limiter.pool_limits(POOL))
    assert counts is not None, "Redis unreachable"
    return counts.leaked + counts.reclaimed


def still_at(pipeline: Pipeline, claims: set[tuple[str, int]]) -> int:
    """How many of ``claims`` their jobs still carry the fence of (not reaped yet)."""
    jobs, fences = zip(*claims, strict=True) if claims else ((), ())
    return int(
        pipeline.one(
            "SELECT count(*) FROM extraction_jobs j JOIN unnest(%s::uuid[], %s::bigint[]) AS c(id, fence) "
            "ON j.id = c.id WHERE j.fence = c.fence",
            [list(jobs), list(fences)],
        )
    )


def outcomes_of(pipeline: Pipeline, claims: set[tuple[str, int]]) -> dict[tuple[str, int], tuple[str, str]]:
    """The attempt ledger's (outcome, worker) of each claim."""
    jobs, fences = zip(*claims, strict=True) if claims else ((), ())
    return {
        (job, int(fence)): (outcome, worker)
        for job, fence, outcome, worker in pipeline.query(
            "SELECT a.job_id::text, a.fence, a.outcome, a.worker_id FROM extraction_attempts a "
            "JOIN unnest(%s::uuid[], %s::bigint[]) AS c(id, fence) ON a.job_id = c.id AND a.fence = c.fence",
            [list(jobs), list(fences)],
        )
    }


@dataclass(frozen=True)
class Finish:
    """How a job B held at the cut ended: its state, its result's fence, the worker of the
    attempt that wrote it and when that attempt was claimed (epoch), and the fences the reaper
    moved it from."""

    state: str
    result_fence: int | None
    result_worker: str | None
    result_claimed_at: float | None
    reaped_fences: tuple[int, ...]


def finishes(pipeline: Pipeline, jobs: set[str]) -> dict[str, Finish]:
    rows = pipeline.query(
        "SELECT j.id::text, j.state, r.fence, a.worker_id, extract(epoch FROM a.started_at)::float8, "
        "  ARRAY(SELECT (e.detail->>'reaped_fence')::bigint FROM job_events e "
        "        WHERE e.job_id = j.id AND e.reason = 'lease_expired' ORDER BY e.state_version) "
        "FROM extraction_jobs j LEFT JOIN extraction_results r ON r.job_id = j.id "
        "LEFT JOIN extraction_attempts a ON a.job_id = r.job_id AND a.fence = r.fence "
        "WHERE j.id = ANY(%s::uuid[])",
        [sorted(jobs)],
    )
    return {job: Finish(*row, tuple(reaped)) for job, *row, reaped in rows}


def epoch_now(pipeline: Pipeline) -> float:
    return float(pipeline.one("SELECT extract(epoch FROM now())::float8"))


def first_claim_after(pipeline: Pipeline, worker_id: str, epoch: float) -> float | None:
    found = pipeline.one(
        "SELECT extract(epoch FROM min(started_at))::float8 FROM extraction_attempts "
        "WHERE worker_id = %s AND started_at > to_timestamp(%s)",
        [worker_id, epoch],
    )
    return float(found) if found is not None else None


def completed_after(pipeline: Pipeline, worker_id: str, epoch: float) -> int:
    return int(
        pipeline.one(
            "SELECT count(*) FROM extraction_attempts WHERE worker_id = %s AND started_at > to_timestamp(%s) "
            "AND outcome IN ('succeeded', 'review_required')",
            [worker_id, epoch],
        )
    )


def seconds(value: float | None) -> str:
    return "never" if value is None else f"{value:.1f} s"


# --- the scenario -------------------------------------------------------------------------------------


@dataclass
class Cut:
    """What the cut took from host B, and when (``at``: monotonic seconds; ``epoch``: the
    database clock) it happened and ended."""

    claims: set[tuple[str, int]]
    permits: dict[str, float]  # holder -> seconds its TTL still ran at the cut
    counted_before: int
    at: float
    epoch: float
    permits_gone_after: float | None = None
    reaped_after: float | None = None
    counted_at_restore: int = 0
    permits_at_restore: int = 0
    restored_epoch: float = 0.0


def cut_host(pipeline: Pipeline, host: Host, worker_id: str) -> Cut:
    """Cut ``host`` off while it holds model calls, and watch the cut until the restore:
    when its permits stop counting and when its jobs are reaped."""

    def calls_out() -> bool:
        return len(permits_of(running_under(pipeline, worker_id))) >= 2

    wait_for(calls_out, timeout=30, interval=0.05, message="host B holding two model calls")
    counted_before = leaked_or_reclaimed()
    epoch = epoch_now(pipeline)
    host.cut()
    at = time.monotonic()
    # Whatever B sent before the link went down reaches the engines within milliseconds; from
    # then on it changes nothing, so this is what it held.
    time.sleep(0.5)
    claims = running_under(pipeline, worker_id)
    cut = Cut(claims, permits_of(claims), counted_before, at, epoch)
    while (elapsed := time.monotonic() - at) < CUT_SECONDS:
        if cut.permits_gone_after is None and not permits_of(claims):
            cut.permits_gone_after = elapsed
        if cut.reaped_after is None and still_at(pipeline, claims) == 0:
            cut.reaped_after = elapsed
        time.sleep(0.2)
    cut.counted_at_restore = leaked_or_reclaimed()
    cut.permits_at_restore = len(permits_of(claims))
    host.restore()
    cut.restored_epoch = epoch_now(pipeline)
    return cut


def test_a_worker_host_cut_off_longer_than_the_lease(
    netns_network, broker, transactional_db, simulator, settings, tmp_path: Path
):
    began = time.monotonic()
    network: Network = netns_network
    simulator.reset()
    simulator.control(**LATENCY)
    env = pipeline_env(
        system_env(broker_url=broker, simulator_url=simulator.base_url, media_root=Path(settings.MEDIA_ROOT)),
        simulator=simulator,
        **CLOCKS,
    )
    processes = SystemProcesses(env=env, log_dir=tmp_path)
    pipeline = Pipeline(processes, dsn=database_conninfo(), web_port=free_port())
    hosts = {name: network.add_host(name) for name in ("hostA", "hostB")}
    workers: dict[str, subprocess.Popen[Any]] = {}
    try:
        pipeline.start_web()
        processes.start("relay", [sys.executable, "manage.py", "run_outbox_relay"])
        pipeline.start_worker("ingress", "ingress", 8)
        pipeline.start_worker("delivery", "delivery", 8)
        processes.start("scheduler", [sys.executable, "manage.py", "run_scheduler"])
        in_namespace = namespace_env(env, network)
        for name, host in hosts.items():
            for forwarder in network.forwarders:
                network.wait_reachable(host, forwarder.listen[1])
            workers[name] = start_host_worker(host, in_namespace, tmp_path / f"worker-{name}.log")
        pipeline.wait_ready(("ingress", "delivery", "worker-hostA", "worker-hostB"))
        pipeline.create_tenant()
        settings.EGRESS_ALLOW_LOOPBACK = True
        registration = connect_reference_erp(
            Tenant.objects.get(slug=pipeline.tenant_slug), pipeline.web_port, pipeline.tenant_slug
        )
        from delivery import dispatch

        assert dispatch.deliver(registration.verification_delivery_id) == "delivered"
        pipeline.erp_slug = pipeline.tenant_slug

        load = Load(pipeline, rate=RATE, seconds=LOAD_SECONDS).start()
        wait_for(lambda: both_claimed(pipeline), timeout=30, message=processes.logs)
        ids = both_claimed(pipeline)
        assert ids is not None
        worker_a, worker_b = ids
        time.sleep(max(0.0, load.t0 + CUT_NOT_BEFORE - time.time()))
        cut = cut_host(pipeline, hosts["hostB"], worker_b)
        assert cut.permits, "the cut took no model call with it: nothing to show"
        # B's connections are the ones it had: it is back once TCP retransmits what the cut held
        # (the model's answers among it), on the retransmission timers' next turn.
        wait_for(
            lambda: first_claim_after(pipeline, worker_b, cut.restored_epoch),
            timeout=60,
            message=lambda: processes.logs(["worker-hostB"]),
        )
        back_after = float(first_claim_after(pipeline, worker_b, cut.restored_epoch) or 0.0)
        in_flight = {(job, int(fence)) for job, fence in (h.split(":") for h in cut.permits)}
        wait_for(
            lambda: {o for o, _ in outcomes_of(pipeline, in_flight).values()} == {"stale_completion"},
            timeout=60,
            message=lambda: f"B's late answers refused: {outcomes_of(pipeline, in_flight)}",
        )
        load.finish()

        accepted = load.accepted
        settle(pipeline, accepted)
        violations = check_invariants(pipeline, accepted, calls_by_job=simulator.stats()["calls_by_job"], erp=True)
        ended = finishes(pipeline, {job for job, _ in cut.claims})
        ledger = outcomes_of(pipeline, cut.claims)
        refused = int(
            pipeline.one(
                "SELECT count(*) FROM extraction_attempts WHERE worker_id = %s AND outcome = 'stale_completion'",
                [worker_b],
            )
        )
        b_completed_since = completed_after(pipeline, worker_b, cut.restored_epoch)
        moved = [f for f in ended.values() if f.result_worker == worker_a and f.result_claimed_at is not None]
        exited = {**pipeline.exited(), **{n: p.returncode for n, p in workers.items() if p.poll() is not None}}
        logged = log_lines(tmp_path, [*SERVICES, "worker-hostA", "worker-hostB"])
        print(
            f"\nworker host cut: {len(load.submissions)} submitted, {len(accepted)} accepted, states "
            f"{dict(pipeline.job_states())}; hostB cut {CUT_SECONDS:g} s (lease {LEASE_SECONDS:g} s, permit TTL "
            f"{PERMIT_TTL_SECONDS:g} s) holding {len(cut.claims)} jobs, {len(cut.permits)} with a call out; reaped "
            f"after {seconds(cut.reaped_after)}, {len(moved)} finished on hostA (claimed there at most "
            f"{seconds(max((f.result_claimed_at - cut.epoch for f in moved), default=None))} into the cut); "
            f"{refused} stale completions of hostB refused; {len(cut.permits)} permits expired "
            f"{seconds(cut.permits_gone_after)} into the cut (leaked+reclaimed +{cut.counted_at_restore - cut.counted_before}); "
            f"hostB claimed again {seconds(back_after - cut.restored_epoch)} after the restore and completed "
            f"{b_completed_since} since; violations {sum(map(len, violations.values()))}; logs {logged}; "
            f"{time.monotonic() - began:.0f} s"
        )
    finally:
        processes.stop_all()
        stop_process_groups(workers, grace_seconds=15)

    assert exited == {}
    assert_invariants(violations)
    # Reaped (fence+1) during the cut and finished on host A under the new fence.
    assert cut.reaped_after is not None and cut.reaped_after < CUT_SECONDS
    for (job, fence), finish in ((claim, ended[claim[0]]) for claim in cut.claims):
        assert finish.reaped_fences == (fence,), (job, finish)
        assert finish.state in ("SUCCEEDED", "REVIEW_REQUIRED"), (job, finish)
        assert finish.result_fence is not None and finish.result_fence > fence, (job, finish)
        assert finish.result_worker == worker_a, (job, finish)
    # B's late answers refused by the fence and recorded in the ledger under B (no result of
    # B's fences: each job's one result is under a later fence, above).
    assert {claim: ledger[claim] for claim in in_flight} == dict.fromkeys(in_flight, ("stale_completion", worker_b))
    assert refused >= len(in_flight)
    # B's permits ran out their TTL while B was away (every one's end, read from Redis at the cut,
    # fell inside the cut), the pool stopped counting them, and its leaked/reclaimed count took
    # them in: B returned to a pool that had not waited for it.
    assert max(cut.permits.values()) + 0.5 < CUT_SECONDS
    assert cut.permits_at_restore == 0 and cut.permits_gone_after is not None
    assert cut.counted_at_restore - cut.counted_before >= len(cut.permits)
    # B survived the cut and works again.
    assert b_completed_since >= 1
