"""Delivery's parts of the SLO report and the self-audit, registered in settings
(SLO_REPORT_SECTIONS, AUDIT_CHECKS): extraction's report and audit run them without
importing delivery."""

from __future__ import annotations

import logging
from pathlib import Path

from django.conf import settings
from django.db import connection
from django.db.backends.utils import CursorWrapper
from kombu import Connection

from config.sql import load_statements
from delivery import scheduling
from delivery.models import Delivery, DeliveryState
from extraction.events import EventType
from extraction.operations.audit import Action, Finding
from extraction.operations.slo import FRACTIONS, Percentiles, ReportSection, SloWindow

SQL = load_statements(Path(__file__).with_suffix(".sql"))
logger = logging.getLogger("delivery")


def erp_delivery_latency(cursor: CursorWrapper, window: SloWindow) -> ReportSection:  # noqa: ARG001 - a section's signature
    """OPS-4: the window's terminal events (completed, dead-lettered) to their first 2xx at each
    subscribed endpoint, p50/p95/p99, and the deliveries not delivered yet."""
    cursor.execute(
        SQL["erp_delivery_latency"],
        {
            "terminal_events": [EventType.COMPLETED, EventType.DEAD_LETTERED],
            "fractions": list(FRACTIONS),
        },
    )
    terminal_events, deliveries, delivered, latency = cursor.fetchone()
    return ReportSection(
        key="erp_delivery_latency",
        title="ERP delivery latency (terminal transition to first 2xx, per delivery)",
        figures={
            "terminal_events": int(terminal_events),
            "deliveries": int(deliveries),
            "delivered": int(delivered),
            "not_delivered": int(deliveries) - int(delivered),
            "latency_seconds": Percentiles.of(delivered, latency),
        },
    )


def overdue_deliveries(*, repair: bool, broker: Connection | None = None) -> Finding:
    """OPS-6: deliveries past their due time that their endpoint would take now: the delivery
    sweep or its consumers are not keeping up. An alarm, always.

    1. Find them (at most AUDIT_LIMIT, oldest first).
    2. With ``repair``: forget their hints (guarded on PENDING; the row count is what was
       woken) and, given a broker, run the delivery sweep now, which hints them again.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            SQL["overdue_deliveries"],
            {
                "lag": settings.AUDIT_DELIVERY_LAG_SECONDS,
                "limit": settings.AUDIT_LIMIT,
            },
        )
        ids = [row[0] for row in cursor.fetchall()]
    kind = "deliveries_overdue"
    examples = tuple(str(i) for i in ids[: settings.AUDIT_EXAMPLES])
    if not ids:
        return Finding(kind, 0, (), Action.NONE)
    detail = f"pending more than {settings.AUDIT_DELIVERY_LAG_SECONDS:g} s past due with a sendable endpoint"
    if not repair:
        return Finding(kind, len(ids), examples, Action.REPORTED, detail=detail)
    woken = Delivery.objects.filter(pk__in=ids, state=DeliveryState.PENDING).update(hinted_at=None)
    hinted = None
    if broker is not None:
        try:
            hinted = scheduling.schedule_due_deliveries(broker)
        except Exception:  # noqa: BLE001 - broker down: the scheduler's own sweep hints them when it is back
            logger.warning("audit: the delivery sweep could not run", exc_info=True)
    swept = "; the delivery sweep did not run" if hinted is None else f"; the delivery sweep hinted {hinted}"
    return Finding(kind, len(ids), examples, Action.ALARMED, acted_on=woken, detail=f"{detail}; woke {woken}{swept}")
