"""The SLO report (OPS-4): ``manage.py slo_report --since … --until …`` over the jobs accepted
in a window, computed in PostgreSQL from the rows that record each job's history.

**Who is counted.** The denominator is every job ACCEPTED in ``[since, until)`` (of one tenant
with ``--tenant``) whose document class the SLO covers: the media type intake sniffed from
the bytes is in ``settings.SLO_DOCUMENT_CONTENT_TYPES`` and the job's schema is one intake
accepts. The class is fixed at acceptance, so no outcome can move a job out of the
denominator; jobs of other classes are counted apart and nowhere else. A bundle counts as the
invoices it held: once its job is SPLIT, each part is a job of the window in its place,
accepted when the bundle was (the client's clock started then; an ingress latency is the
part's own).

**The completion SLI** is the share of those jobs that *completed within the tenant's target*
(``Tenant.completion_target_seconds``, 900 s unless the admin says otherwise): the job reached
SUCCEEDED (a worker's completion, or a reviewer's approval), or a reviewer decided it
(approved or rejected), at most the target after its acceptance, whichever came first. Nothing
else is good:

- a job that ended FAILED_TERMINAL without a reviewer's decision (retries exhausted, deadline,
  unreadable document, cancelled, dead-lettered) is a terminal failure however fast it failed;
- a job in REVIEW_REQUIRED that no reviewer has decided yet is open, not done: sending
  everything to review leaves the SLI where its reviewers' speed puts it;
- a job still open (waiting for a worker or for a reviewer) is not good yet, and once past its
  target it is late. A window whose jobs are all decided one way or the other is "settled";
  until then the SLI can still rise, never fall for what is already counted.

So failing fast or sending work to review can only lower the SLI: the denominator is the same
jobs whatever happens to them, and only a success or a reviewer's decision in time counts.

**REVIEW_REQUIRED has an SLO of its own**: the share of the jobs that entered review which a
reviewer decided within ``settings.REVIEW_TURNAROUND_TARGET_SECONDS`` (4 h) of entering it, with
the REVIEW_REQUIRED rate (jobs that entered review / the denominator) and the turnaround's
percentiles.

**Reviewer throughput**: the review decisions made in ``[since, until)`` (of the tenant's jobs
with ``--tenant``; unlike the figures above, not only on the window's jobs), in total and per
reviewer: decisions per hour of the window (idle hours included), seconds per decision (from
the later of the job entering review and the same reviewer's previous decision, to this
decision: the data records no "opened the job", so a break counts where the job waited; read
the median) and fields corrected per decision (an approval's corrected fields; a rejection
corrects none).

**Accept latency**: the database does not record how long the request took to be answered
202 (the job row and its outbox event are written at one ``now()``); the report says so, and
gives what is recorded: accepted → the requested event published by the relay, and accepted
→ taken in by ingress.

**Model calls and cost** (CAP-4): attempts that reached a paying provider (not the e-invoice
reader or the built-in rules, not handed back unspent) per job, and their reported tokens at
the job's policy price (``MODEL_POLICIES[…]["price_per_1k_tokens_micros"]``, micro-units of
the spend currency per 1,000 tokens).

Other apps add sections (``settings.SLO_REPORT_SECTIONS``: delivery's ERP delivery latency).
A section is a callable ``section(cursor, window) -> ReportSection``, run in the report's
transaction, where the temporary table ``slo_window_jobs`` (``slo.sql``, create_window_jobs)
holds the window's jobs: ``job_id``, ``tenant_id``, ``supported``, ``accepted_at``, ``due_at``
and the other columns that statement documents.

**JSON shape** (``--format json``; ``report`` names the version of this shape). Durations are
seconds; a percentile block is ``{"count": n, "p50": s, "p95": s, "p99": s}`` with null
percentiles when ``count`` is 0; rates are fractions (0..1) or null with a zero denominator;
``examples`` lists at most 10 job ids, oldest first::

    {"report": "slo.v1",
     "window": {"since", "until", "tenant", "as_of"},
     "targets": {"completion_targets_seconds": [900], "review_turnaround_target_seconds": 14400,
                 "supported_content_types": [...], "supported_schemas": [...]},
     "jobs": {"accepted", "supported",
              "unsupported": {"count", "by_class": [{"content_type", "schema", "count"}]}},
     "completion": {"sli", "good", "denominator", "settled", "completed_in_target", "completed_late",
                    "failed_in_target", "failed_late", "awaiting_review_in_target",
                    "awaiting_review_past_target", "in_progress_in_target", "in_progress_past_target"},
     "failures": {"count", "rate", "by_reason": {"<error class>": n}},
     "late": {"terminal_past_target": {"count", "examples"}, "open_past_target": {"count", "examples"}},
     "review": {"entered", "rate", "decided", "approved", "rejected", "decided_in_target", "sli",
                "awaiting_in_target", "awaiting_past_target", "turnaround_seconds": <percentiles>},
     "reviewers": {"decisions", "reviewers", "decisions_per_hour", "seconds_per_decision": <percentiles>,
                   "fields_corrected", "fields_corrected_per_decision",
                   "by_reviewer": [{"reviewer", "decisions", "decisions_per_hour",
                                    "median_seconds_per_decision", "fields_corrected_per_decision"}]},
     "accept_latency": {"recorded": false, "note", "accepted_to_published_seconds": <percentiles>,
                        "unpublished", "accepted_to_taken_in_seconds": <percentiles>},
     "model_calls": {"jobs", "paid_calls", "paid_calls_per_job", "jobs_with_paid_calls",
                     "max_paid_calls_per_job", "paid_calls_per_job_percentiles": <percentiles>,
                     "possibly_paid_calls", "paid_calls_without_usage", "input_tokens",
                     "output_tokens", "cost_micros", "cost_micros_per_job", "unpriced_policies"},
     "sections": {"<key>": {"title", ...figures}}}
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper
from django.utils.module_loading import import_string

from config.db import database_now
from config.sql import load_statements
from extraction.events import EventType
from extraction.intake.acceptance import SCHEMAS
from extraction.models import AttemptOutcome, ReviewDecision
from extraction.providers.builtin import BuiltinProvider
from extraction.providers.einvoice import PROVIDER_NAME as EINVOICE_PROVIDER

SQL = load_statements(Path(__file__).with_suffix(".sql"))

REPORT_VERSION = "slo.v1"
FRACTIONS = (0.5, 0.95, 0.99)
EXAMPLES = 10
# Providers whose answers cost nothing: the e-invoice reader and the built-in rules.
UNPAID_PROVIDERS = (EINVOICE_PROVIDER, BuiltinProvider.name)
# Attempts handed back before any model call (the job's counter restored), or not ended yet.
UNSPENT_OUTCOMES = (AttemptOutcome.CAPACITY_DEFERRED, AttemptOutcome.SHUTDOWN, AttemptOutcome.RUNNING)
ACCEPT_LATENCY_NOTE = (
    "The server-side accept latency (request received to 202 answered) is not recorded in the "
    "database: a job and its requested event are written at one now(). Reported instead: accepted "
    "to the requested event published by the relay, and accepted to the job taken in by ingress."
)


@dataclass(frozen=True)
class SloWindow:
    """What the report covers: jobs accepted in ``[since, until)``, of one tenant or all."""

    since: datetime
    until: datetime
    tenant_id: uuid.UUID | None = None
    tenant_slug: str | None = None
    content_types: tuple[str, ...] = field(default_factory=lambda: tuple(settings.SLO_DOCUMENT_CONTENT_TYPES))
    schemas: tuple[str, ...] = SCHEMAS
    review_target_seconds: int = field(default_factory=lambda: int(settings.REVIEW_TURNAROUND_TARGET_SECONDS))


@dataclass(frozen=True)
class Percentiles:
    count: int
    p50: float | None
    p95: float | None
    p99: float | None

    @classmethod
    def of(cls, count: int | None, values: Sequence[float] | None) -> Percentiles:
        p50, p95, p99 = values if values else (None, None, None)
        return cls(int(count or 0), p50, p95, p99)

    def as_dict(self) -> dict[str, Any]:
        return {"count": self.count, "p50": self.p50, "p95": self.p95, "p99": self.p99}


@dataclass(frozen=True)
class ReportSection:
    """A part of the report another app computes (settings.SLO_REPORT_SECTIONS): ``figures``
    go to the JSON under ``sections[key]`` and are printed under ``title``; a value that is a
    :class:`Percentiles` prints as one line."""

    key: str
    title: str
    figures: dict[str, Any]


ReportSectionFunction = Callable[[CursorWrapper, SloWindow], ReportSection]


@dataclass(frozen=True)
class SloReport:
    window: SloWindow
    as_of: datetime
    body: dict[str, Any]  # the JSON shape of the module docstring, less "report" and "window"
    sections: tuple[ReportSection, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "report": REPORT_VERSION,
            "window": {
                "since": _iso(self.window.since),
                "until": _iso(self.window.until),
                "tenant": self.window.tenant_slug,
                "as_of": _iso(self.as_of),
            },
            **self.body,
            "sections": {s.key: {"title": s.title, **_plain(s.figures)} for s in self.sections},
        }


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def _plain(figures: dict[str, Any]) -> dict[str, Any]:
    return {k: v.as_dict() if isinstance(v, Percentiles) else v for k, v in figures.items()}


def _rate(part: float, whole: int) -> float | None:
    return part / whole if whole else None


def report_sections() -> tuple[ReportSectionFunction, ...]:
    return tuple(import_string(path) for path in settings.SLO_REPORT_SECTIONS)


def _prices() -> tuple[list[str], list[int]]:
    policies = sorted(settings.MODEL_POLICIES)
    return policies, [int(settings.MODEL_POLICIES[p].get("price_per_1k_tokens_micros", 0)) for p in policies]


def _paying_policies() -> list[str]:
    """Policies whose pool calls a provider that bills (not the built-in rules)."""
    return sorted(
        name
        for name, policy in settings.MODEL_POLICIES.items()
        if settings.PROVIDER_POOLS.get(policy["provider_pool"], {}).get("provider") != BuiltinProvider.name
    )


def slo_report(window: SloWindow) -> SloReport:
    """The report for ``window``, in one transaction.

    1. Materialize the window's jobs with their document class and history (create_window_jobs).
    2. Read the document classes, the completion outcomes, late jobs, failures, review, accept
       latency and model calls from it, each one named statement with its percentiles.
    3. Run the other apps' sections (SLO_REPORT_SECTIONS) on the same table.
    """
    fractions = list(FRACTIONS)
    # One transaction, so one now(); the window's jobs and their history are read once, into
    # the temporary table every later statement reads (no other session sees it).
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(SQL["drop_window_jobs"])
        cursor.execute(
            SQL["create_window_jobs"],
            {
                "since": window.since,
                "until": window.until,
                "tenant": window.tenant_id,
                "content_types": list(window.content_types),
                "schemas": list(window.schemas),
            },
        )
        as_of = database_now()

        cursor.execute(SQL["document_classes"])
        classes = cursor.fetchall()
        supported = sum(n for is_supported, _, _, n in classes if is_supported)
        unsupported = [
            {"content_type": content_type, "schema": schema, "count": n}
            for is_supported, content_type, schema, n in classes
            if not is_supported
        ]
        cursor.execute(SQL["completion_targets"])
        targets = [int(seconds) for (seconds,) in cursor.fetchall()]

        cursor.execute(SQL["completion"])
        (
            denominator,
            completed_in_target,
            completed_late,
            failed_in_target,
            failed_late,
            awaiting_in_target,
            awaiting_past_target,
            in_progress_in_target,
            in_progress_past_target,
        ) = cursor.fetchone()

        cursor.execute(SQL["late_jobs"], {"examples": EXAMPLES})
        late = {kind: {"count": int(n), "examples": list(ids)} for kind, n, ids in cursor.fetchall()}

        cursor.execute(SQL["failures_by_reason"])
        by_reason = {reason or "unknown": int(n) for reason, n in cursor.fetchall()}
        failures = sum(by_reason.values())

        cursor.execute(
            SQL["review"],
            {
                "approved": ReviewDecision.Decision.APPROVED,
                "rejected": ReviewDecision.Decision.REJECTED,
                "target": window.review_target_seconds,
                "fractions": fractions,
            },
        )
        (entered, decided, approved, rejected, decided_in_target, waiting, waiting_late, turnaround) = cursor.fetchone()

        reviewers = _reviewer_throughput(cursor, window, fractions)

        cursor.execute(SQL["accept_latency"], {"fractions": fractions, "requested_event": EventType.REQUESTED})
        published, unpublished, to_published, taken_in, to_taken_in = cursor.fetchone()

        policies, prices = _prices()
        cursor.execute(
            SQL["model_calls"],
            {
                "fractions": fractions,
                "policies": policies,
                "prices": prices,
                "paying_policies": _paying_policies(),
                "unpaid": list(UNPAID_PROVIDERS),
                "unspent": [str(o) for o in UNSPENT_OUTCOMES],
                "lease_lost": str(AttemptOutcome.LEASE_LOST),
            },
        )
        (
            jobs,
            paid_calls,
            jobs_with_paid_calls,
            max_paid_calls,
            calls_percentiles,
            possibly_paid,
            without_usage,
            input_tokens,
            output_tokens,
            cost_micros,
            unpriced,
        ) = cursor.fetchone()

        sections = tuple(section(cursor, window) for section in report_sections())
        cursor.execute(SQL["drop_window_jobs"])

    body = {
        "targets": {
            "completion_targets_seconds": targets,
            "review_turnaround_target_seconds": window.review_target_seconds,
            "supported_content_types": list(window.content_types),
            "supported_schemas": list(window.schemas),
        },
        "jobs": {
            "accepted": supported + sum(c["count"] for c in unsupported),
            "supported": supported,
            "unsupported": {"count": sum(c["count"] for c in unsupported), "by_class": unsupported},
        },
        "completion": {
            "sli": _rate(completed_in_target, denominator),
            "good": completed_in_target,
            "denominator": denominator,
            "settled": awaiting_in_target + in_progress_in_target == 0,
            "completed_in_target": completed_in_target,
            "completed_late": completed_late,
            "failed_in_target": failed_in_target,
            "failed_late": failed_late,
            "awaiting_review_in_target": awaiting_in_target,
            "awaiting_review_past_target": awaiting_past_target,
            "in_progress_in_target": in_progress_in_target,
            "in_progress_past_target": in_progress_past_target,
        },
        "failures": {"count": failures, "rate": _rate(failures, denominator), "by_reason": by_reason},
        "late": {
            "terminal_past_target": late.get("terminal", {"count": 0, "examples": []}),
            "open_past_target": late.get("unfinished", {"count": 0, "examples": []}),
        },
        "review": {
            "entered": entered,
            "rate": _rate(entered, denominator),
            "decided": decided,
            "approved": approved,
            "rejected": rejected,
            "decided_in_target": decided_in_target,
            "sli": _rate(decided_in_target, entered),
            "awaiting_in_target": waiting,
            "awaiting_past_target": waiting_late,
            "turnaround_seconds": Percentiles.of(decided, turnaround).as_dict(),
        },
        "reviewers": reviewers,
        "accept_latency": {
            "recorded": False,
            "note": ACCEPT_LATENCY_NOTE,
            "accepted_to_published_seconds": Percentiles.of(published, to_published).as_dict(),
            "unpublished": unpublished,
            "accepted_to_taken_in_seconds": Percentiles.of(taken_in, to_taken_in).as_dict(),
        },
        "model_calls": {
            "jobs": jobs,
            "paid_calls": int(paid_calls),
            "paid_calls_per_job": _rate(int(paid_calls), jobs),
            "jobs_with_paid_calls": jobs_with_paid_calls,
            "max_paid_calls_per_job": int(max_paid_calls),
            "paid_calls_per_job_percentiles": Percentiles.of(jobs, calls_percentiles).as_dict(),
            "possibly_paid_calls": int(possibly_paid),
            "paid_calls_without_usage": int(without_usage),
            "input_tokens": int(input_tokens),
            "output_tokens": int(output_tokens),
            "cost_micros": float(cost_micros),
            "cost_micros_per_job": _rate(float(cost_micros), jobs),
            "unpriced_policies": sorted(unpriced),
        },
    }
    return SloReport(window=window, as_of=as_of, body=body, sections=sections)


def _reviewer_throughput(cursor: CursorWrapper, window: SloWindow, fractions: list[float]) -> dict[str, Any]:
    """The reviewers' figures (reviewer_throughput): the total, then one entry per reviewer,
    busiest first."""
    cursor.execute(
        SQL["reviewer_throughput"],
        {
            "since": window.since,
            "until": window.until,
            "tenant": window.tenant_id,
            "approved": ReviewDecision.Decision.APPROVED,
            "fractions": fractions,
        },
    )
    rows = cursor.fetchall()
    hours = (window.until - window.since).total_seconds() / 3600
    names = dict(
        get_user_model().objects.filter(pk__in=[row[1] for row in rows if not row[0]]).values_list("pk", "username")
    )
    total = next(row for row in rows if row[0])
    _, _, decisions, corrected, timed, seconds = total
    return {
        "decisions": decisions,
        "reviewers": len(rows) - 1,
        "decisions_per_hour": decisions / hours,
        "seconds_per_decision": Percentiles.of(timed, seconds).as_dict(),
        "fields_corrected": int(corrected),
        "fields_corrected_per_decision": _rate(int(corrected), decisions),
        "by_reviewer": [
            {
                "reviewer": names.get(reviewer_id, str(reviewer_id)),
                "decisions": n,
                "decisions_per_hour": n / hours,
                "median_seconds_per_decision": Percentiles.of(n_timed, times).p50,
                "fields_corrected_per_decision": _rate(int(n_corrected), n),
            }
            for is_total, reviewer_id, n, n_corrected, n_timed, times in rows
            if not is_total
        ],
    }


# --- the text form ------------------------------------------------------------------------------


def _pct(rate: float | None) -> str:
    return "n/a" if rate is None else f"{rate * 100:.2f} %"


def _seconds(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.3f} s"


def _percentiles_line(p: dict[str, Any]) -> str:
    if not p["count"]:
        return "none"
    return f"n={p['count']:,}  p50 {_seconds(p['p50'])}  p95 {_seconds(p['p95'])}  p99 {_seconds(p['p99'])}"


def _ids(block: dict[str, Any]) -> str:
    return f" (e.g. {', '.join(block['examples'])})" if block["examples"] else ""


def _per_decision(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _reviewer_lines(t: dict[str, Any]) -> list[str]:
    lines = [
        f"Reviewer throughput: {t['decisions']:,} decisions by {t['reviewers']:,} reviewers in the window "
        f"({t['decisions_per_hour']:.2f} per hour); median {_seconds(t['seconds_per_decision']['p50'])} per "
        f"decision; {t['fields_corrected']:,} fields corrected ({_per_decision(t['fields_corrected_per_decision'])} "
        "per decision)"
    ]
    lines += [
        f"  {x['reviewer']}: {x['decisions']:,} decisions ({x['decisions_per_hour']:.2f} per hour), "
        f"median {_seconds(x['median_seconds_per_decision'])} per decision, "
        f"{_per_decision(x['fields_corrected_per_decision'])} fields corrected per decision"
        for x in t["by_reviewer"]
    ]
    return lines


def render_text(report: SloReport) -> str:
    """The report for a person: the same figures as the JSON, one topic a paragraph."""
    d = report.as_dict()
    w, jobs, c, f, r, a, m = (
        d["window"],
        d["jobs"],
        d["completion"],
        d["failures"],
        d["review"],
        d["accept_latency"],
        d["model_calls"],
    )
    targets = d["targets"]
    lines = [
        f"SLO report for jobs accepted {w['since']} to {w['until']}"
        f"{' (tenant ' + w['tenant'] + ')' if w['tenant'] else ' (all tenants)'}, as of {w['as_of']}",
        f"Jobs accepted: {jobs['accepted']:,}; of supported document classes: {jobs['supported']:,}",
    ]
    if jobs["unsupported"]["count"]:
        classes = ", ".join(
            f"{x['content_type']} {x['schema']}: {x['count']:,}" for x in jobs["unsupported"]["by_class"]
        )
        lines.append(f"  other classes, not in any figure below: {jobs['unsupported']['count']:,} ({classes})")
    target_text = ", ".join(f"{t:,} s" for t in targets["completion_targets_seconds"]) or "n/a"
    lines += [
        "",
        f"Completion SLI (OPS-4): {_pct(c['sli'])} ({c['good']:,} of {c['denominator']:,} succeeded or decided by a "
        f"reviewer within the target: {target_text}){'' if c['settled'] else '; not settled, jobs are still open within their target'}",
        f"  completed in target {c['completed_in_target']:,}, completed late {c['completed_late']:,}",
        f"  failed in target {c['failed_in_target']:,}, failed late {c['failed_late']:,}",
        f"  awaiting review: in target {c['awaiting_review_in_target']:,}, past target {c['awaiting_review_past_target']:,}",
        f"  in progress: in target {c['in_progress_in_target']:,}, past target {c['in_progress_past_target']:,}",
        f"Terminal failures: {f['count']:,} ({_pct(f['rate'])})"
        + (": " + ", ".join(f"{reason} {n:,}" for reason, n in f["by_reason"].items()) if f["by_reason"] else ""),
        f"Late jobs: ended past target {d['late']['terminal_past_target']['count']:,}{_ids(d['late']['terminal_past_target'])}; "
        f"open past target {d['late']['open_past_target']['count']:,}{_ids(d['late']['open_past_target'])}",
        "",
        f"Review: {r['entered']:,} entered review ({_pct(r['rate'])} REVIEW_REQUIRED rate); {r['decided']:,} decided "
        f"(approved {r['approved']:,}, rejected {r['rejected']:,})",
        f"  review SLI: {_pct(r['sli'])} decided within {targets['review_turnaround_target_seconds']:,.0f} s; "
        f"awaiting a reviewer: in target {r['awaiting_in_target']:,}, past target {r['awaiting_past_target']:,}",
        f"  turnaround: {_percentiles_line(r['turnaround_seconds'])}",
        "",
        *_reviewer_lines(d["reviewers"]),
        "",
        f"Accept latency: {a['note']}",
        f"  accepted -> published: {_percentiles_line(a['accepted_to_published_seconds'])}; not published yet {a['unpublished']:,}",
        f"  accepted -> taken in: {_percentiles_line(a['accepted_to_taken_in_seconds'])}",
        "",
        f"Paid model calls (CAP-4): {m['paid_calls']:,} for {m['jobs']:,} jobs "
        f"({'n/a' if m['paid_calls_per_job'] is None else format(m['paid_calls_per_job'], '.3f')} per job, "
        f"max {m['max_paid_calls_per_job']:,}); possibly paid (reaped) {m['possibly_paid_calls']:,}; "
        f"without reported usage {m['paid_calls_without_usage']:,}",
        f"  tokens in {m['input_tokens']:,}, out {m['output_tokens']:,}; cost {m['cost_micros']:,.3f} micro-units "
        f"({'n/a' if m['cost_micros_per_job'] is None else format(m['cost_micros_per_job'], ',.3f')} per job)"
        + (f"; no price for {', '.join(m['unpriced_policies'])}" if m["unpriced_policies"] else ""),
    ]
    for section in report.sections:
        lines += ["", f"{section.title}:"]
        for name, value in section.figures.items():
            if isinstance(value, Percentiles):
                text = _percentiles_line(value.as_dict())
            elif isinstance(value, int) and not isinstance(value, bool):
                text = f"{value:,}"
            else:
                text = str(value)
            lines.append(f"  {name.replace('_', ' ')}: {text}")
    return "\n".join(lines) + "\n"
