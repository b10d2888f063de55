"""The claim batcher: the slots of one llm-worker process that claim at the same moment claim
together, in one fair statement for as many jobs as there are slots asking
(``lifecycle.claim_next_jobs``), by group commit (:mod:`.group_commit`).

A backlog wakes the slots all at once (every freed slot claims again), and each single claim was
its own commit, with its NOTIFY. A batch takes the jobs the same number of single claims would
take in turn (the fair order, each tenant's cap per row); a slot for which there was no job gets
None, as an empty single claim would. Claims that name different pools with headroom are
written as one statement per set of pools.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from extraction.execution import lifecycle
from extraction.execution.group_commit import Pending, ProcessBatcher
from extraction.execution.lifecycle import Claim
from extraction.execution.runtime import db_step


class ClaimRequest(NamedTuple):
    """A slot that wants a job: its worker and the model policies whose pools have headroom."""

    worker_id: str
    policies: tuple[str, ...]


PendingClaim = Pending[ClaimRequest, Claim | None]


def claim_batch(batch: list[PendingClaim]) -> None:
    """Claim for every slot of ``batch``: one statement per kind of request, the jobs handed
    out in the fair order; the slots left over get None. A failed claim takes no job: its slots
    get the error."""
    by_request: dict[ClaimRequest, list[PendingClaim]] = {}
    for pending in batch:
        by_request.setdefault(pending.request, []).append(pending)
    for request, slots in by_request.items():
        try:
            with db_step():
                claims: Sequence[Claim] = lifecycle.claim_next_jobs(
                    worker_id=request.worker_id, policies=request.policies, count=len(slots)
                )
        except Exception as exc:  # noqa: BLE001 - each slot handles the database's error as a single claim would
            for pending in slots:
                pending.fail(exc)
            continue
        for index, pending in enumerate(slots):
            pending.settle(claims[index] if index < len(claims) else None)


# This process's claim batcher: ``batcher().submit(request)`` is a claim or None.
batcher: ProcessBatcher[ClaimRequest, Claim | None] = ProcessBatcher(claim_batch, size_setting="WORKER_CLAIM_BATCH")
