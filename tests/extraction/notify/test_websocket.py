"""/ws/jobs/ through the real middleware stack (origin check, session, subprotocol token or
ticket), with real PostgreSQL and channels-redis: replay, snapshot, live notices, tenant
isolation and revocation (NTF-1, NTF-2)."""

from __future__ import annotations

import asyncio
import time
from importlib import import_module

import pytest
from channels.db import database_sync_to_async as sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.utils import timezone

from accounts.models import ApiToken, Membership
from config.asgi import application
from extraction.models import ExtractionJob, JobEvent
from extraction.notify.listeners import JobNotice, tenant_group
from extraction.notify.notifier import Notifier, push_revocation
from tests.factories import submit, take_in

pytestmark = [pytest.mark.anyio]

ALLOWED_ORIGIN = (b"origin", b"http://localhost")


async def open_socket(
    *,
    headers: list | None = None,
    subprotocols: list[str] | None = None,
    path: str = "/ws/jobs/",
    origin: tuple[bytes, bytes] | None = ALLOWED_ORIGIN,
):
    all_headers = ([origin] if origin else []) + (headers or [])
    comm = WebsocketCommunicator(application, path, headers=all_headers, subprotocols=subprotocols)
    connected, detail = await comm.connect(timeout=5)
    return comm, connected, detail


def token_protocols(raw: str) -> list[str]:
    return ["jobs.v1", f"token.{raw}"]


async def subscribe(comm: WebsocketCommunicator, **fields) -> tuple[list[dict], dict]:
    """Send a subscribe frame; return the catch-up frames and the closing "subscribed" frame."""
    await comm.send_json_to({"type": "subscribe", **fields})
    frames = []
    while True:
        frame = await comm.receive_json_from(timeout=5)
        if frame["type"] in ("subscribed", "error"):
            return frames, frame
        frames.append(frame)


async def expect_close(comm: WebsocketCommunicator, timeout: float) -> int:
    """Wait for the server to close the socket; return the close code. Frames before it are skipped."""
    deadline = time.monotonic() + timeout
    while True:
        output = await comm.receive_output(timeout=max(0.01, deadline - time.monotonic()))
        if output["type"] == "websocket.close":
            return output["code"]


def event_ids(job_id: str) -> list[int]:
    return list(JobEvent.objects.filter(job_id=job_id).order_by("id").values_list("id", flat=True))


# --- who may connect ------------------------------------------------------------------------------


async def test_no_credentials_is_refused_with_4401(tenant_a):
    _, connected, code = await open_socket()
    assert (connected, code) == (False, 4401)


async def test_foreign_origin_is_refused_even_with_a_valid_session(browser_user):
    comm, connected, _ = await open_socket(headers=[browser_user.cookie], origin=(b"origin", b"http://evil.example"))
    assert connected is False
    comm, connected, _ = await open_socket(headers=[browser_user.cookie])
    assert connected is True  # the same session from the site's own origin is fine
    await comm.disconnect()


async def test_token_in_the_query_string_is_not_accepted(tenant_a):
    _, connected, code = await open_socket(path=f"/ws/jobs/?token={tenant_a.token}")
    assert (connected, code) == (False, 4401)
    _, connected, code = await open_socket(path=f"/ws/jobs/?token=token.{tenant_a.token}", subprotocols=["jobs.v1"])
    assert (connected, code) == (False, 4401)


async def test_token_subprotocol_is_accepted_and_only_jobs_v1_is_echoed(tenant_a):
    comm, connected, subprotocol = await open_socket(subprotocols=token_protocols(tenant_a.token))
    assert (connected, subprotocol) == (True, "jobs.v1")
    await comm.disconnect()


async def test_unknown_token_is_refused(tenant_a):
    _, connected, code = await open_socket(subprotocols=token_protocols("dx_nope_nope"))
    assert (connected, code) == (False, 4401)


async def test_session_cookie_authenticates_a_member(browser_user):
    comm, connected, _ = await open_socket(headers=[browser_user.cookie])
    assert connected is True
    _, subscribed = await subscribe(comm)
    assert subscribed["mode"] == "snapshot"
    await comm.disconnect()


async def test_ticket_opens_one_socket_only(tenant_a):
    response = await sync_to_async(tenant_a.client.post)("/api/v1/notification-tickets")
    assert response.status_code == 201, response.content
    body = response.json()
    assert tenant_a.token not in str(body)
    comm, connected, subprotocol = await open_socket(subprotocols=body["subprotocols"])
    assert (connected, subprotocol) == (True, "jobs.v1")
    await comm.disconnect()
    _, connected, code = await open_socket(subprotocols=body["subprotocols"])
    assert (connected, code) == (False, 4401)


# --- catch-up after a reconnect ----------------------------------------------------------------------


async def test_reconnect_with_cursor_replays_exactly_the_missed_events(tenant_a):
    first_job = await sync_to_async(submit)(tenant_a)
    comm, _, _ = await open_socket(subprotocols=token_protocols(tenant_a.token))
    frames, subscribed = await subscribe(comm)
    assert subscribed["mode"] == "snapshot"
    assert [(f["type"], f["job_id"], f["state_version"]) for f in frames] == [("job.snapshot", first_job, 1)]
    cursor = subscribed["event_id"]
    await comm.disconnect()

    # Missed while disconnected: the first job moves on, a second job arrives.
    await sync_to_async(take_in)(first_job)
    second_job = await sync_to_async(submit)(tenant_a)

    comm, _, _ = await open_socket(subprotocols=token_protocols(tenant_a.token))
    frames, subscribed = await subscribe(comm, cursor=cursor)
    assert subscribed["mode"] == "replay"
    assert [(f["type"], f["job_id"], f["state_version"], f["state"]) for f in frames] == [
        ("job.changed", first_job, 2, "READY"),
        ("job.changed", second_job, 1, "ACCEPTED"),
    ]
    assert [f["event_id"] for f in frames] == sorted(f["event_id"] for f in frames)
    assert subscribed["event_id"] == frames[-1]["event_id"]
    await comm.disconnect()


async def test_one_job_subscription_replays_only_that_job(tenant_a):
    job = await sync_to_async(submit)(tenant_a)
    await sync_to_async(submit)(tenant_a)
    await sync_to_async(take_in)(job)
    comm, _, _ = await open_socket(subprotocols=token_protocols(tenant_a.token))
    frames, subscribed = await subscribe(comm, job_id=job, cursor=0)
    assert subscribed["mode"] == "replay"
    assert [(f["job_id"], f["state_version"]) for f in frames] == [(job, 1), (job, 2)]
    await comm.disconnect()


async def test_cursor_too_far_behind_gets_a_snapshot_of_current_states(tenant_a, settings):
    settings.NOTIFY_REPLAY_LIMIT = 2
    jobs = [await sync_to_async(submit)(tenant_a) for _ in range(3)]
    cursor = (await sync_to_async(event_ids)(jobs[0]))[0] - 1
    await sync_to_async(take_in)(jobs[0])
    comm, _, _ = await open_socket(subprotocols=token_protocols(tenant_a.token))
    frames, subscribed = await subscribe(comm, cursor=cursor)
    assert subscribed["mode"] == "snapshot"
    assert {f["job_id"]: (f["type"], f["state"], f["state_version"]) for f in frames} == {
        jobs[0]: ("job.snapshot", "READY", 2),
        jobs[1]: ("job.snapshot", "ACCEPTED", 1),
        jobs[2]: ("job.snapshot", "ACCEPTED", 1),
    }
    newest = await sync_to_async(lambda: JobEvent.objects.order_by("-id").first().pk)()
    assert subscribed["event_id"] == newest
    await comm.disconnect()


async def test_cursor_from_the_future_gets_a_snapshot(tenant_a):
    await sync_to_async(submit)(tenant_a)
    comm, _, _ = await open_socket(subprotocols=token_protocols(tenant_a.token))
    _, subscribed = await subscribe(comm, cursor=10**12)
    assert subscribed["mode"] == "snapshot"
    await comm.disconnect()


# --- live notices ----------------------------------------------------------------------------------


async def test_committed_transition_reaches_the_subscriber_through_the_notifier(tenant_a):
    job = await sync_to_async(submit)(tenant_a)
    notifier = Notifier(poll_interval=0.1)
    try:
        await notifier.forward_new_events()  # start position (re-sends the last seconds)
        comm, _, _ = await open_socket(subprotocols=token_protocols(tenant_a.token))
        await subscribe(comm, job_id=job)
        await sync_to_async(take_in)(job)
        assert await notifier.forward_new_events() == 1
        frame = await comm.receive_json_from(timeout=5)
        assert {k: frame[k] for k in ("type", "job_id", "state_version", "state")} == {
            "type": "job.changed",
            "job_id": job,
            "state_version": 2,
            "state": "READY",
        }
        assert frame["event_id"] == (await sync_to_async(event_ids)(job))[-1]
        assert "tenant_id" not in frame
        await comm.disconnect()
    finally:
        await notifier.close()


async def test_a_notice_the_layer_lost_is_sent_from_the_event_log(tenant_a, settings):
    """No notifier runs here, so the transition never reaches the channel layer (as when a
    pub/sub message is dropped): the stream's periodic catch-up still sends it, once."""
    settings.NOTIFY_REAUTH_SECONDS = 0.5
    settings.NOTIFY_CATCHUP_SECONDS = 1
    job = await sync_to_async(submit)(tenant_a)
    comm, _, _ = await open_socket(subprotocols=token_protocols(tenant_a.token))
    await subscribe(comm, job_id=job)
    await sync_to_async(take_in)(job)
    frame = await comm.receive_json_from(timeout=5)
    assert (frame["type"], frame["job_id"], frame["state_version"], frame["state"]) == ("job.changed", job, 2, "READY")
    assert frame["event_id"] == (await sync_to_async(event_ids)(job))[-1]
    assert await comm.receive_nothing(timeout=2.5)  # sent once, not on every round
    await comm.disconnect()


async def test_a_lost_notice_is_sent_even_after_a_later_one_got_through(tenant_a, settings):
    """A Redis failover can drop one notice while a later, higher one is delivered: the
    periodic catch-up starts from what the database said, not from the live notices."""
    settings.NOTIFY_REAUTH_SECONDS = 0.5
    settings.NOTIFY_CATCHUP_SECONDS = 1
    lost_job, live_job = [await sync_to_async(submit)(tenant_a) for _ in range(2)]
    comm, _, _ = await open_socket(subprotocols=token_protocols(tenant_a.token))
    await subscribe(comm)
    await sync_to_async(take_in)(lost_job)  # no notifier: its notice is never published
    await sync_to_async(take_in)(live_job)
    (live_event,) = await sync_to_async(
        lambda: list(JobEvent.objects.filter(job_id=live_job, state_version=2).values_list("id", flat=True))
    )()
    live = JobNotice(
        event_id=live_event, job_id=live_job, tenant_id=str(tenant_a.tenant.pk), state_version=2, state="READY"
    )
    await get_channel_layer().group_send(tenant_group(tenant_a.tenant.pk), live.layer_message())
    frames = [await comm.receive_json_from(timeout=5) for _ in range(2)]
    assert [(f["job_id"], f["state_version"]) for f in frames] == [(live_job, 2), (lost_job, 2)]
    assert await comm.receive_nothing(timeout=2.5)  # the live one is not repeated by the catch-up
    await comm.disconnect()


async def test_no_frame_of_another_tenant_ever_reaches_a_socket(tenant_a, tenant_b):
    job_a = await sync_to_async(submit)(tenant_a)
    job_b = await sync_to_async(submit)(tenant_b)
    notifier = Notifier(poll_interval=0.1)
    try:
        await notifier.forward_new_events()
        comm, _, _ = await open_socket(subprotocols=token_protocols(tenant_a.token))
        replayed, _ = await subscribe(comm, cursor=0)
        assert {f["job_id"] for f in replayed} == {job_a}

        # B's own job cannot be subscribed to by A: it answers like a missing one.
        other = await open_socket(subprotocols=token_protocols(tenant_a.token))
        _, error = await subscribe(other[0], job_id=job_b)
        assert error == {"type": "error", "code": "not_found", "detail": "No such extraction job."}
        await other[0].disconnect()

        await sync_to_async(take_in)(job_b)
        await sync_to_async(take_in)(job_a)
        await notifier.forward_new_events()
        frame = await comm.receive_json_from(timeout=5)
        assert (frame["job_id"], frame["state_version"]) == (job_a, 2)
        assert await comm.receive_nothing(timeout=0.5)

        # Send-time check: even a B notice pushed into A's own group is not sent.
        forged = JobNotice(
            event_id=10**9, job_id=job_b, tenant_id=str(tenant_b.tenant.pk), state_version=9, state="SUCCEEDED"
        )
        await get_channel_layer().group_send(tenant_group(tenant_a.tenant.pk), forged.layer_message())
        assert await comm.receive_nothing(timeout=0.5)
        await comm.disconnect()
    finally:
        await notifier.close()


# --- revocation (NTF-2) ----------------------------------------------------------------------------


async def test_revoked_token_with_push_closes_the_socket_at_once(tenant_a, settings):
    settings.NOTIFY_REAUTH_SECONDS = 30  # the periodic re-check cannot be what closes it
    comm, _, _ = await open_socket(subprotocols=token_protocols(tenant_a.token))
    await subscribe(comm)
    token = await sync_to_async(ApiToken.objects.get)(tenant=tenant_a.tenant)
    await sync_to_async(token.revoke)()
    started = time.monotonic()
    await push_revocation(get_channel_layer(), token_id=token.pk)
    assert await expect_close(comm, timeout=3) == 4403
    assert time.monotonic() - started < 3
    await comm.disconnect()


async def test_revoked_token_without_push_closes_within_the_reauth_interval(tenant_a, settings):
    settings.NOTIFY_REAUTH_SECONDS = 1
    comm, _, _ = await open_socket(subprotocols=token_protocols(tenant_a.token))
    await subscribe(comm)
    await asyncio.sleep(1.2)  # a re-check passes while the token is good: the socket stays
    assert await comm.receive_nothing(timeout=0.1)
    token = await sync_to_async(ApiToken.objects.get)(tenant=tenant_a.tenant)
    await sync_to_async(token.revoke)()
    started = time.monotonic()
    assert await expect_close(comm, timeout=3) == 4403
    assert time.monotonic() - started <= settings.NOTIFY_REAUTH_SECONDS + 0.5
    await comm.disconnect()


async def test_revoked_membership_pushed_by_the_notifier_closes_the_session_socket(browser_user, settings):
    settings.NOTIFY_REAUTH_SECONDS = 30
    notifier = Notifier(poll_interval=0.1)
    try:
        await notifier.push_revocations()  # starts the notifier's revocation window
        comm, _, _ = await open_socket(headers=[browser_user.cookie])
        await subscribe(comm)
        await sync_to_async(Membership.objects.filter(pk=browser_user.membership.pk).update)(revoked_at=timezone.now())
        started = time.monotonic()
        assert await notifier.push_revocations() == 1
        assert await expect_close(comm, timeout=3) == 4403
        assert time.monotonic() - started < 3
    finally:
        await notifier.close()


async def test_revoked_membership_without_push_closes_within_the_reauth_interval(browser_user, settings):
    settings.NOTIFY_REAUTH_SECONDS = 1
    comm, _, _ = await open_socket(headers=[browser_user.cookie])
    await subscribe(comm)
    await sync_to_async(Membership.objects.filter(pk=browser_user.membership.pk).update)(revoked_at=timezone.now())
    started = time.monotonic()
    assert await expect_close(comm, timeout=3) == 4403
    assert time.monotonic() - started <= settings.NOTIFY_REAUTH_SECONDS + 0.5
    await comm.disconnect()


async def test_logging_out_closes_the_session_socket(browser_user, settings):
    settings.NOTIFY_REAUTH_SECONDS = 1
    comm, _, _ = await open_socket(headers=[browser_user.cookie])
    await subscribe(comm)
    store = import_module(settings.SESSION_ENGINE).SessionStore(browser_user.session_key)
    await sync_to_async(store.flush)()
    assert await expect_close(comm, timeout=3) == 4403
    await comm.disconnect()


async def test_a_revoked_socket_gets_no_more_notices(tenant_a, settings):
    settings.NOTIFY_REAUTH_SECONDS = 30
    job = await sync_to_async(submit)(tenant_a)
    comm, _, _ = await open_socket(subprotocols=token_protocols(tenant_a.token))
    await subscribe(comm, job_id=job)
    token = await sync_to_async(ApiToken.objects.get)(tenant=tenant_a.tenant)
    await sync_to_async(token.revoke)()
    layer = get_channel_layer()
    await push_revocation(layer, token_id=token.pk)
    state_version = await sync_to_async(lambda: ExtractionJob.objects.get(pk=job).state_version)()
    notice = JobNotice(
        event_id=10**9, job_id=job, tenant_id=str(tenant_a.tenant.pk), state_version=state_version + 1, state="READY"
    )
    await layer.group_send(tenant_group(tenant_a.tenant.pk), notice.layer_message())
    output = await comm.receive_output(timeout=3)
    assert output == {"type": "websocket.close", "code": 4403}
    await comm.disconnect()


async def test_a_reauthorization_that_errors_closes_the_socket(browser_user, settings):
    """Fail closed: when the re-check cannot run (here the session store cannot even be
    loaded), the socket closes as if the check had said no."""
    settings.NOTIFY_REAUTH_SECONDS = 1
    comm, _, _ = await open_socket(headers=[browser_user.cookie])
    await subscribe(comm)
    settings.SESSION_ENGINE = "no.such.session.engine"
    assert await expect_close(comm, timeout=3) == 4403
    await comm.disconnect()


async def test_an_idle_socket_stays_open(tenant_a):
    """Quiet for longer than redis-py 8's default 5 s socket timeout, which closed such sockets
    with 1011 (see requirements.txt): the socket stays open and its channel-layer receive is
    still alive, so the next notice arrives."""
    job = await sync_to_async(submit)(tenant_a)
    comm, _, _ = await open_socket(subprotocols=token_protocols(tenant_a.token))
    await subscribe(comm)
    await asyncio.sleep(7)
    assert await comm.receive_nothing(timeout=0.5)
    notice = JobNotice(event_id=10**9, job_id=job, tenant_id=str(tenant_a.tenant.pk), state_version=2, state="READY")
    await get_channel_layer().group_send(tenant_group(tenant_a.tenant.pk), notice.layer_message())
    frame = await comm.receive_json_from(timeout=5)
    assert (frame["type"], frame["job_id"], frame["state_version"]) == ("job.changed", job, 2)
    await comm.disconnect()
