"""Helpers the delivery tests share: a completed job with its outbox event, a verified
endpoint, and a resolver that never asks real DNS."""

from __future__ import annotations

import socket
from collections.abc import Callable, Sequence

from delivery import dispatch
from delivery.endpoints import register_endpoint
from delivery.models import WebhookEndpoint
from extraction.events import EventType
from extraction.models import JobState, OutboxEvent
from tests.factories import TenantContext, make_job


def completed_job(ctx: TenantContext, *, review_required: bool = False) -> tuple[str, OutboxEvent]:
    """A job taken through the real lifecycle to SUCCEEDED (or REVIEW_REQUIRED), with the
    outbox event the dispatcher fans out."""
    state = JobState.REVIEW_REQUIRED if review_required else JobState.SUCCEEDED
    job = make_job(ctx.tenant, state=state)
    event_type = EventType.REVIEW_REQUIRED if review_required else EventType.COMPLETED
    return str(job.pk), OutboxEvent.objects.get(job_id=job.pk, event_type=event_type)


def active_endpoint(
    ctx: TenantContext, url: str, types: Sequence[str] = ("extraction.completed.v1",)
) -> tuple[WebhookEndpoint, str]:
    """Register an endpoint and answer its verification (the receiver must be up): (endpoint, secret)."""
    registration = register_endpoint(tenant=ctx.tenant, url=url, event_types=list(types))
    assert dispatch.deliver(registration.verification_delivery_id) == "delivered"
    endpoint = WebhookEndpoint.objects.get(pk=registration.endpoint.pk)
    assert endpoint.status == "active"
    return endpoint, registration.secret.secret


def fake_resolver(table: dict[str, list[str]]) -> Callable:
    """A getaddrinfo stand-in: never real DNS."""

    def resolve(host, port, family=0, type=0, proto=0, flags=0):  # getaddrinfo's names
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        out = []
        for address in table[host]:
            fam = socket.AF_INET6 if ":" in address else socket.AF_INET
            sockaddr = (address, port, 0, 0) if fam == socket.AF_INET6 else (address, port)
            out.append((fam, socket.SOCK_STREAM, 6, "", sockaddr))
        return out

    return resolve
