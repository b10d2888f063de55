"""``manage.py capacity_plan``: CAP-3 for every configured provider pool, or for a new one from
flags (``--rpm 600 --tpm 600000 --reserved-tokens 6000 --concurrency 30 --mean-latency 15 ...``).
A configured pool's inputs come from its configuration, the attempt ledger's last hour and the
jobs table; a flag overrides any of them (a what-if), a missing statistic is assumed, and every
input line says which it was.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from extraction.capacity.plan import (
    CapacityPlan,
    MissingPlanInput,
    PlanOverrides,
    PlanValue,
    configured_pools,
    format_duration,
    format_rate,
    make_plan,
    plan_inputs_for_new_pool,
    plan_inputs_for_pool,
)

NEW_POOL_NAME = "new pool"
_LIMIT_FLAGS = ("rpm", "tpm", "reserved_tokens", "concurrency", "kv_cache_tokens")


class Command(BaseCommand):
    help = "Print the capacity plan (CAP-3) of each provider pool, or of a pool planned from flags."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--pool", help="Only this pool; a name that is not configured is planned from flags.")
        parser.add_argument("--rpm", type=float, help="Requests per minute.")
        parser.add_argument("--tpm", type=float, help="Tokens per minute (the TPM budget).")
        parser.add_argument("--reserved-tokens", type=float, help="Tokens reserved per request (prompt + max output).")
        parser.add_argument("--concurrency", type=float, help="Calls in flight at once.")
        parser.add_argument(
            "--kv-cache-tokens",
            type=float,
            help="A local vLLM pool's KV-cache budget: concurrency = this / reserved tokens.",
        )
        parser.add_argument("--mean-latency", type=float, help="Mean model latency in seconds (not a p95).")
        parser.add_argument("--attempts-per-job", type=float, help="Mean attempts per job (retries included).")
        parser.add_argument("--backlog", type=float, help="Jobs to drain.")
        parser.add_argument("--arrival-rate", type=float, help="Jobs per second still arriving while draining.")

    def handle(self, *args: Any, **options: Any) -> None:
        overrides = PlanOverrides(
            requests_per_minute=options["rpm"],
            tokens_per_minute=options["tpm"],
            reserved_tokens=options["reserved_tokens"],
            concurrency=options["concurrency"],
            kv_cache_tokens=options["kv_cache_tokens"],
            mean_latency_seconds=options["mean_latency"],
            attempts_per_job=options["attempts_per_job"],
            backlog=options["backlog"],
            arrival_rate=options["arrival_rate"],
        )
        known = configured_pools()
        pool = options["pool"]
        try:
            if pool is None and any(options[flag] is not None for flag in _LIMIT_FLAGS):
                plans = [make_plan(plan_inputs_for_new_pool(NEW_POOL_NAME, overrides))]
            elif pool is not None and pool not in known:
                plans = [make_plan(plan_inputs_for_new_pool(pool, overrides))]
            else:
                plans = [make_plan(plan_inputs_for_pool(name, overrides)) for name in ([pool] if pool else known)]
        except MissingPlanInput as exc:
            raise CommandError(f"{exc} (configured pools: {', '.join(known) or 'none'})") from exc
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write("\n\n".join(render_plan(plan) for plan in plans))


def _number(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.4f}"


def _input_line(label: str, shown: str, value: PlanValue) -> str:
    source = value.source + (f": {value.note}" if value.note else "")
    return f"    {label:<22}{shown:<22}{source}"


def render_plan(plan: CapacityPlan) -> str:
    i = plan.inputs
    a = plan.attempts
    title = f"Pool {i.pool}" if i.configured else f"Pool {i.pool} (not configured: planned from the given values)"
    lines = [title, "  inputs"]
    lines.append(_input_line("requests per minute", _number(i.requests_per_minute.value), i.requests_per_minute))
    lines.append(_input_line("tokens per minute", _number(i.tokens_per_minute.value), i.tokens_per_minute))
    lines.append(_input_line("reserved tokens", _number(i.reserved_tokens.value), i.reserved_tokens))
    if i.kv_cache_tokens is not None:
        lines.append(_input_line("KV-cache tokens", _number(i.kv_cache_tokens.value), i.kv_cache_tokens))
    lines.append(_input_line("concurrency", _number(i.concurrency.value), i.concurrency))
    lines.append(_input_line("mean latency", f"{i.mean_latency_seconds.value:,.3f} s", i.mean_latency_seconds))
    lines.append(_input_line("attempts per job", format_rate(i.attempts_per_job.value), i.attempts_per_job))
    lines.append(_input_line("backlog", f"{_number(i.backlog.value)} jobs", i.backlog))
    if i.arrival_rate is not None:
        lines.append(_input_line("arrival rate", f"{format_rate(i.arrival_rate.value)} jobs/s", i.arrival_rate))
    concurrency_name = "KV-cache term" if i.kv_cache_tokens is not None else "concurrency term"
    latency = f"{i.mean_latency_seconds.value:,.3f} s"
    lines += [
        "  CAP-3",
        f"    attempt capacity      {format_rate(a.per_second)} attempts/s (binding: {a.binding})",
        f"      rpm term            {format_rate(a.rpm_term):>10} attempts/s  = {_number(i.requests_per_minute.value)} / 60",
        (
            f"      tpm term            {format_rate(a.tpm_term):>10} attempts/s"
            f"  = {_number(i.tokens_per_minute.value)} / (60 × {_number(i.reserved_tokens.value)})"
        ),
        (
            f"      {concurrency_name:<20}{format_rate(a.concurrency_term):>10} attempts/s"
            f"  = {_number(i.concurrency.value)} / {latency}"
        ),
        (
            f"    job capacity          {format_rate(plan.jobs_per_second)} jobs/s"
            f"  = {format_rate(a.per_second)} / {format_rate(i.attempts_per_job.value)} attempts per job"
        ),
        (
            f"    in flight at capacity {plan.in_flight_at_capacity:,.1f} of {_number(i.concurrency.value)}"
            f"  (CAP-1: {format_rate(a.per_second)} attempts/s × {latency})"
        ),
        f"    drain of {_number(i.backlog.value)} jobs: {format_duration(plan.drain_seconds)}",
    ]
    if i.arrival_rate is not None:
        arrival = i.arrival_rate.value
        net = plan.jobs_per_second - arrival
        if plan.drain_seconds_with_arrivals is None:
            growth = f"the backlog grows by {format_rate(-net)} jobs/s" if net < 0 else "the backlog never shrinks"
            lines.append(
                f"    with {format_rate(arrival)} jobs/s arriving: never: arrivals {'exceed' if net < 0 else 'equal'}"
                f" capacity ({format_rate(arrival)} in, {format_rate(plan.jobs_per_second)} out; {growth})"
            )
        else:
            lines.append(
                f"    with {format_rate(arrival)} jobs/s arriving: {format_duration(plan.drain_seconds_with_arrivals)}"
                f"  (net {format_rate(net)} jobs/s)"
            )
            if plan.in_flight_for_arrivals is not None:
                lines.append(
                    f"    in flight for the arrivals alone: {plan.in_flight_for_arrivals:,.1f}"
                    f"  (CAP-1: {format_rate(arrival)} × {format_rate(i.attempts_per_job.value)}"
                    f" × {i.mean_latency_seconds.value:,.3f} s)"
                )
    return "\n".join(lines)
