"""bench/statement_stats.py's arithmetic: pg_stat_statements' totals turned into per-job figures."""

from __future__ import annotations

from bench.statement_stats import label, per_job


def test_totals_become_per_job_figures_heaviest_statement_first():
    after = {
        "statements": {
            "SELECT 1": (40, 40, 2.0),
            "WITH done AS (\n    SELECT *\n      FROM unnest($1)": (5, 20, 30.0),
        },
        "commits": 50,
        "wal_bytes": 200_000,
    }
    phase = per_job(after, jobs=20)
    assert (phase["statements_per_job"], phase["commits_per_job"], phase["wal_bytes_per_job"]) == (2.25, 2.5, 10_000)
    assert phase["exec_ms_per_job"] == 1.6
    assert [row["statement"] for row in phase["top"]] == ["WITH done AS ( SELECT * FROM unnest($1)", "SELECT 1"]
    assert phase["top"][0] == {
        "statement": "WITH done AS ( SELECT * FROM unnest($1)",
        "calls_per_job": 0.25,
        "rows_per_job": 1.0,
        "exec_ms_per_job": 1.5,
        "mean_exec_ms": 6.0,
    }


def test_a_statement_is_labelled_by_its_first_words_whitespace_folded():
    assert label("SELECT  a,\n\t b FROM t" + " x" * 100) == ("SELECT a, b FROM t" + " x" * 100)[:110]
