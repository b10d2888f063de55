"""GET /api/v1/job-events/stream through the ASGI application daphne serves: the same
notices as the WebSocket, resumed from Last-Event-ID (NTF-1), ended on revocation (NTF-2)."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.testing import ApplicationCommunicator

from accounts.models import ApiToken
from config.asgi import application
from extraction.models import JobEvent
from extraction.notify.notifier import Notifier, push_revocation
from extraction.notify.sse import HEARTBEAT
from tests.factories import submit, take_in

pytestmark = [pytest.mark.anyio]

STREAM = "/api/v1/job-events/stream"


def parse_events(body: bytes) -> list[dict]:
    """SSE text → [{"id": ..., "event": ..., "data": {...}}] (comments and retry lines dropped)."""
    events = []
    for block in body.decode().split("\n\n"):
        fields = {}
        for line in block.splitlines():
            name, _, value = line.partition(": ")
            if name in ("id", "event"):
                fields[name] = value
            elif name == "data":
                fields["data"] = json.loads(value)
        if "event" in fields:
            events.append(fields)
    return events


async def open_stream(*, headers: list[tuple[bytes, bytes]], query: bytes = b"") -> tuple[ApplicationCommunicator, int]:
    scope = {
        "type": "http",
        "http_version": "1.1",
        "method": "GET",
        "path": STREAM,
        "raw_path": STREAM.encode(),
        "query_string": query,
        "headers": [(b"host", b"localhost"), *headers],
        "scheme": "http",
        "server": ("localhost", 8001),
        "client": ("127.0.0.1", 50000),
    }
    comm = ApplicationCommunicator(application, scope)
    await comm.send_input({"type": "http.request", "body": b"", "more_body": False})
    start = await comm.receive_output(timeout=5)
    assert start["type"] == "http.response.start"
    return comm, start["status"]


async def read_until(comm: ApplicationCommunicator, event_type: str) -> list[dict]:
    events: list[dict] = []
    while not any(e["event"] == event_type for e in events):
        message = await comm.receive_output(timeout=5)
        events.extend(parse_events(message["body"]))
    return events


def bearer(raw: str) -> tuple[bytes, bytes]:
    return (b"authorization", f"Bearer {raw}".encode())


async def test_stream_without_credentials_is_401(tenant_a):
    comm, status = await open_stream(headers=[])
    assert status == 401
    body = await comm.receive_output(timeout=5)
    assert body["more_body"] is False


async def test_token_in_the_query_string_is_not_accepted(tenant_a):
    _, status = await open_stream(headers=[], query=f"token={tenant_a.token}".encode())
    assert status == 401


async def test_last_event_id_replays_the_missed_events_then_streams_live(tenant_a):
    job = await database_sync_to_async(submit)(tenant_a)
    cursor = await database_sync_to_async(lambda: JobEvent.objects.get(job_id=job).pk)()
    await database_sync_to_async(take_in)(job)
    other = await database_sync_to_async(submit)(tenant_a)

    notifier = Notifier(poll_interval=0.1)
    try:
        await notifier.forward_new_events()
        comm, status = await open_stream(headers=[bearer(tenant_a.token), (b"last-event-id", str(cursor).encode())])
        assert status == 200
        events = await read_until(comm, "subscribed")
        changed = [e for e in events if e["event"] == "job.changed"]
        assert [(e["data"]["job_id"], e["data"]["state_version"]) for e in changed] == [(job, 2), (other, 1)]
        assert [int(e["id"]) for e in changed] == [e["data"]["event_id"] for e in changed]
        assert events[-1]["data"]["mode"] == "replay"
        assert int(events[-1]["id"]) == changed[-1]["data"]["event_id"]

        await database_sync_to_async(take_in)(other)
        await notifier.forward_new_events()
        live = await read_until(comm, "job.changed")
        assert [(e["data"]["job_id"], e["data"]["state"]) for e in live] == [(other, "READY")]
        await comm.send_input({"type": "http.disconnect"})
        await comm.wait(timeout=5)
    finally:
        await notifier.close()


async def test_no_last_event_id_gets_a_snapshot(tenant_a, tenant_b):
    job = await database_sync_to_async(submit)(tenant_a)
    await database_sync_to_async(submit)(tenant_b)
    comm, _ = await open_stream(headers=[bearer(tenant_a.token)])
    events = await read_until(comm, "subscribed")
    assert [(e["event"], e["data"]["job_id"]) for e in events[:-1]] == [("job.snapshot", job)]
    assert events[-1]["data"]["mode"] == "snapshot"
    await comm.send_input({"type": "http.disconnect"})
    await comm.wait(timeout=5)


async def test_another_tenants_job_is_404(tenant_a, tenant_b):
    job_b = await database_sync_to_async(submit)(tenant_b)
    _, status = await open_stream(headers=[bearer(tenant_a.token)], query=f"job_id={job_b}".encode())
    assert status == 404


async def test_revoked_token_ends_the_stream(tenant_a, settings):
    settings.NOTIFY_REAUTH_SECONDS = 30
    comm, status = await open_stream(headers=[bearer(tenant_a.token)])
    await read_until(comm, "subscribed")
    token = await database_sync_to_async(ApiToken.objects.get)(tenant=tenant_a.tenant)
    await database_sync_to_async(token.revoke)()
    await push_revocation(get_channel_layer(), token_id=token.pk)
    # A keep-alive comment may come first (a slow machine's stream outlives a heartbeat).
    last = await comm.receive_output(timeout=3)
    while last["body"] == HEARTBEAT:
        last = await comm.receive_output(timeout=3)
    assert [event["event"] for event in parse_events(last["body"])] == ["revoked"]
    assert last["more_body"] is False
    await comm.wait(timeout=5)  # the consumer ends by itself

    _, status = await open_stream(headers=[bearer(tenant_a.token)])
    assert status == 401
