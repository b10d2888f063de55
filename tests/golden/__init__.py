"""Golden files: the committed answer of a deterministic function for a fixed input.

``assert_golden(name, value)`` compares ``value`` (as JSON) with tests/golden/<name>. Run the
test with ``UPDATE_GOLDEN=1`` to write the file instead, read the diff, and commit it.
``in_other_process`` computes a value in a fresh interpreter with another PYTHONHASHSEED, so
an answer that depends on set or hash order (which one process cannot notice) fails."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.system import ROOT

GOLDEN = Path(__file__).resolve().parent


def _canonical(value: Any) -> str:
    return json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def assert_golden(name: str, value: Any) -> None:
    path = GOLDEN / name
    text = _canonical(value)
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"{path.relative_to(ROOT)} is missing: run this test with UPDATE_GOLDEN=1 and commit it"
    assert json.loads(text) == json.loads(path.read_text(encoding="utf-8")), (
        f"differs from {path.relative_to(ROOT)}; if the change is intended, run with UPDATE_GOLDEN=1 and commit it"
    )


def in_other_process(code: str, *, hash_seed: int) -> Any:
    """Run ``code`` (which must ``print`` one JSON value as its last line) in a new Python
    process at the repository root with ``PYTHONHASHSEED=hash_seed``; the value."""
    env = {**os.environ, "PYTHONHASHSEED": str(hash_seed)}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])
