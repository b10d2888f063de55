"""bench/scale.py's arithmetic: the layouts, the knee the signal should name, the tenants'
shares, and the verdict it draws from a table of layouts (no processes: the run itself is the
benchmark, not a test)."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from bench.scale import FULL, Layout, Scenario, checks, curve, share_ranges, tenant_shares


def test_layouts_split_evenly_over_the_hosts():
    assert Layout.parse("4x2").placement() == ["hostA", "hostB", "hostA", "hostB"]
    assert Layout.parse("3x1").placement() == [None, None, None]
    for bad in ("3x2", "4x3", "0x1", "four"):
        with pytest.raises(argparse.ArgumentTypeError):
            Layout.parse(bad)


def test_the_budget_binds_between_two_and_four_workers():
    # 4 slots at 1 s each: 4 calls/s per worker against a budget of 600/min = 10 calls/s.
    assert [FULL.model_jobs_per_second(n) for n in (1, 2, 3, 4)] == [4.0, 8.0, 10.0, 10.0]
    assert FULL.knee == 3
    assert Scenario(rpm=480).knee == 2  # 8 calls/s: two workers' slots spend it exactly


def test_shares_over_the_window_and_their_range_over_buckets():
    assert tenant_shares({"big": 300, "small": 300}) == {"big": 0.5, "small": 0.5}
    assert tenant_shares({"big": 0}) == {"big": 0.0}
    ranges = share_ranges({"big": [5, 6, 0], "small": [5, 4, 0]})
    assert ranges == {"big": (0.5, 0.6), "small": (0.4, 0.5)}  # the empty bucket says nothing


def row(workers: int, jobs_per_s: float, quota_use: float, *, replicas: int = 3, shares: Any = None) -> dict[str, Any]:
    figures = {
        "workers": workers,
        "hosts": 1,
        "jobs_per_s": jobs_per_s,
        "quota_use": quota_use,
        "rate_limited_share": 0.0,
        "tenant_shares": shares or {"big": 0.5, "small": 0.5},
        "signal": {"replicas": replicas},
    }
    return figures | {"checks": checks(figures, FULL)}


def test_a_curve_that_grows_then_stays_at_the_budget_flattens_where_the_signal_says():
    rows = [row(1, 3.8, 0.38), row(2, 7.5, 0.75), row(3, 9.8, 0.98), row(4, 9.9, 0.99)]
    verdict = curve(rows, FULL)
    assert verdict["grows_below_the_knee"] is True
    assert verdict["stays_at_the_budget"] is True
    assert verdict["flattens_at_workers"] == verdict["signal_replicas"] == 3
    assert verdict["all_checks_met"] is True


def test_a_tier_that_does_not_scale_or_fill_the_budget_or_serves_one_tenant_is_named():
    rows = [
        row(1, 3.8, 0.38),
        row(2, 5.0, 0.50),  # less than 0.9 × 2 × 3.8
        row(4, 9.0, 0.90, shares={"big": 0.7, "small": 0.3}),
    ]
    verdict = curve(rows, FULL)
    assert verdict["grows_below_the_knee"] is False
    assert verdict["stays_at_the_budget"] is False
    assert verdict["flattens_at_workers"] is None
    assert rows[2]["checks"]["tenants_served_alike"] is False
    assert verdict["all_checks_met"] is False
