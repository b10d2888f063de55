"""The fault suite (tests/acceptance/faults.py) in its bounded form: every fault once under
load, against the real processes, and every invariant over every accepted job (OPS-5)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.acceptance.faults import FAULTS
from tests.system import ROOT

pytestmark = pytest.mark.slow

# Invariants over jobs (the others count SUCCEEDED jobs or processes).
JOB_INVARIANTS = ("(a)", "(b)", "(c)", "(d)", "(f)")


@pytest.mark.timeout(1500)
def test_bounded_run_injects_every_fault_recovers_and_violates_nothing(tmp_path):
    out = tmp_path / "faults"
    argv = [
        sys.executable, "-m", "tests.acceptance.faults",
        "--duration", "60", "--rate", "2", "--time-scale", "0.003", "--sandbox", "bench_faults_ci", "--out", str(out),
    ]  # fmt: skip
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=1400)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]

    verdict = json.loads((out / "faults.json").read_text())
    assert verdict["verdict"] == "pass"
    assert [row["fault"] for row in verdict["faults"]] == [fault.name for fault in FAULTS]
    for row in verdict["faults"]:
        assert row["injected"] >= 1, row
        assert row["recovered"] is True, row
    for invariant in verdict["invariants"]:
        assert invariant["violations"] == 0, invariant
        if invariant["invariant"][:3] in JOB_INVARIANTS:
            assert invariant["jobs_checked"] >= 100, invariant
    assert (out / "report.md").read_text().startswith("# Fault-injection suite — PASS")
