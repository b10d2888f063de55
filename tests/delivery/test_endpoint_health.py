"""An endpoint's next health, decided by delivery.endpoint_health.next_health alone: no database,
a fixed clock. The dispatch tests run the same rules through real deliveries."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from delivery.endpoint_health import AttemptSeen, EndpointHealth, HealthPolicy, next_health
from delivery.models import CircuitState, EndpointStatus

NOW = datetime(2026, 12, 2, 9, 30, tzinfo=UTC)
POLICY = HealthPolicy(circuit_failures=3, circuit_open_seconds=60, open_cap_seconds=3600, disable_after_seconds=86400)
HEALTHY = EndpointHealth(
    status=EndpointStatus.ACTIVE,
    disabled_reason="",
    verified_at=NOW - timedelta(days=30),
    consecutive_failures=0,
    auth_failures=0,
    failing_since=None,
    circuit_state=CircuitState.CLOSED,
    circuit_open_until=None,
    retry_not_before=None,
)
FAILED_5XX = AttemptSeen(delivered=False, counted=True)


def after(current: EndpointHealth, seen: AttemptSeen) -> EndpointHealth:
    return next_health(current, seen, now=NOW, policy=POLICY)


def test_a_2xx_to_a_healthy_endpoint_changes_nothing():
    assert after(HEALTHY, AttemptSeen(delivered=True)) == HEALTHY
    assert HEALTHY.healthy


def test_a_2xx_resets_a_failing_endpoint_and_closes_its_circuit():
    failing = replace(
        HEALTHY,
        consecutive_failures=7,
        auth_failures=1,
        failing_since=NOW - timedelta(hours=2),
        circuit_state=CircuitState.HALF_OPEN,
        circuit_open_until=NOW + timedelta(seconds=30),
        retry_not_before=NOW + timedelta(seconds=5),
    )
    assert not failing.healthy

    reset = after(failing, AttemptSeen(delivered=True))

    assert reset == replace(HEALTHY, retry_not_before=NOW + timedelta(seconds=5))  # a 429's wait stands


def test_a_verifications_2xx_activates_the_endpoint():
    flagged = replace(HEALTHY, status=EndpointStatus.FLAGGED, disabled_reason="check its secret", auth_failures=3)

    assert after(flagged, AttemptSeen(delivered=True, verification=True)) == replace(
        HEALTHY, verified_at=NOW, disabled_reason=""
    )


def test_counted_failures_open_the_circuit_at_the_threshold_doubling_past_it():
    health = HEALTHY
    opened = []
    for _ in range(5):
        health = after(health, FAILED_5XX)
        opened.append((health.consecutive_failures, health.circuit_state, health.circuit_open_until))

    assert opened == [
        (1, CircuitState.CLOSED, None),
        (2, CircuitState.CLOSED, None),
        (3, CircuitState.OPEN, NOW + timedelta(seconds=60)),
        (4, CircuitState.OPEN, NOW + timedelta(seconds=120)),
        (5, CircuitState.OPEN, NOW + timedelta(seconds=240)),
    ]
    assert health.failing_since == NOW


def test_the_opening_is_capped():
    long_failing = replace(HEALTHY, consecutive_failures=40, failing_since=NOW - timedelta(hours=1))
    assert after(long_failing, FAILED_5XX).circuit_open_until == NOW + timedelta(seconds=3600)


def test_a_failed_half_open_probe_opens_the_circuit_again_below_the_threshold():
    probing = replace(HEALTHY, consecutive_failures=0, circuit_state=CircuitState.HALF_OPEN)
    health = after(probing, FAILED_5XX)
    assert (health.circuit_state, health.circuit_open_until) == (CircuitState.OPEN, NOW + timedelta(seconds=60))


def test_a_429_throttles_without_counting_against_the_endpoint():
    health = after(HEALTHY, AttemptSeen(delivered=False, throttle_seconds=30))
    assert health == replace(HEALTHY, retry_not_before=NOW + timedelta(seconds=30))


def test_410_disables_the_endpoint_whatever_its_status():
    pending = replace(HEALTHY, status=EndpointStatus.PENDING_VERIFICATION)
    health = after(pending, AttemptSeen(delivered=False, counted=True, gone=True))
    assert (health.status, health.disabled_reason) == (EndpointStatus.DISABLED, "The endpoint answered 410 Gone.")


@pytest.mark.parametrize(
    ("earlier", "status"), [(0, EndpointStatus.ACTIVE), (1, EndpointStatus.ACTIVE), (2, "flagged")]
)
def test_repeated_auth_failures_flag_an_active_endpoint(earlier: int, status: str):
    health = after(
        replace(HEALTHY, auth_failures=earlier), AttemptSeen(delivered=False, counted=True, auth_failure=True)
    )
    assert (health.auth_failures, health.status) == (earlier + 1, status)
    if status == "flagged":
        assert health.disabled_reason == "The endpoint refused our signature (401/403) repeatedly: check its secret."


def test_another_failure_clears_the_auth_streak():
    health = after(replace(HEALTHY, auth_failures=2), FAILED_5XX)
    assert (health.auth_failures, health.status) == (0, EndpointStatus.ACTIVE)


def test_an_active_endpoint_failing_past_the_limit_is_disabled_with_the_day_it_began():
    since = datetime(2026, 11, 30, 8, 15, tzinfo=UTC)
    health = after(replace(HEALTHY, consecutive_failures=50, failing_since=since), FAILED_5XX)
    assert (health.status, health.disabled_reason) == (EndpointStatus.DISABLED, "Failing since 2026-11-30 08:15 UTC.")
    assert health.failing_since == since


def test_a_flagged_endpoint_keeps_its_status_and_reason_through_failures():
    flagged = replace(
        HEALTHY,
        status=EndpointStatus.FLAGGED,
        disabled_reason="check its secret",
        failing_since=NOW - timedelta(days=9),
    )
    health = after(flagged, FAILED_5XX)
    assert (health.status, health.disabled_reason) == (EndpointStatus.FLAGGED, "check its secret")
