"""An endpoint's health after one attempt, decided by one pure function (DLV-5).

A 2xx resets the endpoint (and a verification's 2xx activates it). A failure counts against it
unless it was a 429 (the receiver is alive and asked us to wait); counted failures open the
circuit after ``circuit_failures`` in a row, for ``circuit_open_seconds`` doubling per failure
past the threshold (at most ``open_cap_seconds``), and a failed half-open probe opens it again.
A 429 throttles the endpoint for its Retry-After. The status follows: 410 disables the
endpoint, ``auth_failures_to_flag`` 401/403 in a row flag an active one (a configuration
alarm), and an active endpoint failing for ``disable_after_seconds`` is disabled.

:func:`next_health` knows nothing of the database: the attempt's transaction reads the row,
asks it, and writes what changed (``delivery.dispatch``), with the database's clock as ``now``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from django.conf import settings

from delivery.models import CircuitState, EndpointStatus, WebhookEndpoint

# In a row, 401/403 answers that flag an endpoint: the receiver refuses our signature.
AUTH_FAILURES_TO_FLAG = 3
# The circuit's opening doubles at most this many times past the threshold.
MAX_DOUBLINGS = 10


@dataclass(frozen=True)
class EndpointHealth:
    """The columns of ``webhook_endpoints`` an attempt's outcome may change."""

    status: str
    disabled_reason: str
    verified_at: datetime | None
    consecutive_failures: int
    auth_failures: int
    failing_since: datetime | None
    circuit_state: str
    circuit_open_until: datetime | None
    retry_not_before: datetime | None

    FIELDS = (
        "status",
        "disabled_reason",
        "verified_at",
        "consecutive_failures",
        "auth_failures",
        "failing_since",
        "circuit_state",
        "circuit_open_until",
        "retry_not_before",
    )

    @classmethod
    def of(cls, endpoint: WebhookEndpoint) -> EndpointHealth:
        return cls(**{name: getattr(endpoint, name) for name in cls.FIELDS})

    @property
    def healthy(self) -> bool:
        """Nothing for a 2xx to reset."""
        return (
            self.consecutive_failures == 0
            and self.auth_failures == 0
            and self.failing_since is None
            and self.circuit_state == CircuitState.CLOSED
        )


@dataclass(frozen=True)
class AttemptSeen:
    """What one attempt's answer says about its endpoint."""

    delivered: bool
    verification: bool = False
    counted: bool = False  # a failure that counts against the endpoint (not a 429)
    auth_failure: bool = False  # 401/403
    gone: bool = False  # 410
    throttle_seconds: float | None = None  # a 429's Retry-After


@dataclass(frozen=True)
class HealthPolicy:
    circuit_failures: int
    circuit_open_seconds: float
    open_cap_seconds: float
    disable_after_seconds: float
    auth_failures_to_flag: int = AUTH_FAILURES_TO_FLAG

    @classmethod
    def from_settings(cls) -> HealthPolicy:
        return cls(
            circuit_failures=settings.WEBHOOK_CIRCUIT_FAILURES,
            circuit_open_seconds=settings.WEBHOOK_CIRCUIT_OPEN_SECONDS,
            open_cap_seconds=settings.WEBHOOK_RETRY_CAP_SECONDS,
            disable_after_seconds=settings.WEBHOOK_AUTO_DISABLE_DAYS * 86400,
        )


def next_health(current: EndpointHealth, seen: AttemptSeen, *, now: datetime, policy: HealthPolicy) -> EndpointHealth:
    """The endpoint's health after an attempt answered as ``seen``; every test reads
    ``current`` (the row as it was before this attempt)."""
    if seen.delivered:
        reset = replace(
            current,
            consecutive_failures=0,
            auth_failures=0,
            failing_since=None,
            circuit_state=CircuitState.CLOSED,
            circuit_open_until=None,
        )
        if seen.verification:
            return replace(reset, status=EndpointStatus.ACTIVE, verified_at=now, disabled_reason="")
        return reset

    failures = current.consecutive_failures + (1 if seen.counted else 0)
    opens = seen.counted and (current.circuit_state == CircuitState.HALF_OPEN or failures >= policy.circuit_failures)
    doublings = min(MAX_DOUBLINGS, max(0, failures - policy.circuit_failures))
    open_for = min(policy.open_cap_seconds, policy.circuit_open_seconds * 2**doublings)
    status, reason = _status_after_failure(current, seen, now=now, policy=policy)
    return replace(
        current,
        status=status,
        disabled_reason=reason,
        consecutive_failures=failures,
        auth_failures=current.auth_failures + 1 if seen.auth_failure else 0,
        failing_since=(current.failing_since or now) if seen.counted else current.failing_since,
        circuit_state=CircuitState.OPEN if opens else current.circuit_state,
        circuit_open_until=now + timedelta(seconds=open_for) if opens else current.circuit_open_until,
        retry_not_before=(
            now + timedelta(seconds=seen.throttle_seconds) if seen.throttle_seconds is not None
            else current.retry_not_before
        ),
    )  # fmt: skip


def _status_after_failure(
    current: EndpointHealth, seen: AttemptSeen, *, now: datetime, policy: HealthPolicy
) -> tuple[str, str]:
    if seen.gone:
        return EndpointStatus.DISABLED, "The endpoint answered 410 Gone."
    if current.status != EndpointStatus.ACTIVE:
        return current.status, current.disabled_reason
    if seen.auth_failure and current.auth_failures + 1 >= policy.auth_failures_to_flag:
        return EndpointStatus.FLAGGED, "The endpoint refused our signature (401/403) repeatedly: check its secret."
    failing_since = current.failing_since
    if (
        seen.counted
        and failing_since is not None
        and failing_since <= now - timedelta(seconds=policy.disable_after_seconds)
    ):
        return EndpointStatus.DISABLED, f"Failing since {failing_since.astimezone(UTC):%Y-%m-%d %H:%M} UTC."
    return current.status, current.disabled_reason
