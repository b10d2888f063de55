"""The load report (tests/acceptance/load.py) end to end: a short open-loop run of the real
processes writes its report, its figures and its plot, and the figures agree with what the
model itself counted."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bench.submissions import Arrivals
from tests.system import ROOT

pytestmark = pytest.mark.slow

RATE, DURATION, SEED = 2.0, 10.0, 1


@pytest.mark.timeout(600)
def test_a_short_run_writes_the_report_json_and_plot(tmp_path):
    out = tmp_path / "load"
    argv = [
        sys.executable, "-m", "tests.acceptance.load",
        "--rate", str(RATE), "--duration", str(DURATION), "--seed", str(SEED),
        "--warmup", "3", "--workers", "web=2", "--llm-concurrency", "20", "--drain", "60",
        "--sandbox", "bench_load_ci", "--out", str(out),
    ]  # fmt: skip
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=540)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    result = json.loads((out / "load.json").read_text())
    expected = len(list(Arrivals(RATE, seed=SEED).offsets(DURATION)))
    accept, jobs = result["accept"], result["jobs"]
    assert accept["submitted"] == expected
    assert accept["outcomes"] == {"202": expected}  # an idle system accepts every submission
    assert jobs["jobs"] == expected and jobs["not_terminal"] == 0 and result["drained"] is True
    assert sum(jobs["states"].values()) == expected
    assert result["exited_processes"] == {}
    # Every token the ledger holds is one the model reported, and no other.
    assert jobs["tokens_total"] == {
        "input": result["model_side"]["prompt_tokens"],
        "output": result["model_side"]["completion_tokens"],
    }
    assert jobs["jobs_with_a_model_answer"] + jobs["jobs_without_a_model_call"] == expected
    assert set(result["resources"]) >= {
        "postgresql backends of the sandbox",
        "rabbitmq (beam.smp)",
        "redis-server",
        "python: worker",
        "python: web",
    }
    assert len(result["series"]["t"]) >= DURATION

    report = (out / "report.md").read_text()
    assert "## The load contract" in report
    assert f"Poisson (exponential gaps, seed {SEED}) at 2 submissions/s, for 10 s of schedule" in report
    assert (out / "load.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
