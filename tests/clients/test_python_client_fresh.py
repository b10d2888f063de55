"""The committed Python client is what ``bin/generate-client`` makes from today's API: an API
change (a view, a serializer, a schema hook) committed without regenerating the client fails
here, naming the command that brings the client up to date."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.system import ROOT

CLIENT = ROOT / "clients" / "python"
REGENERATE = "the committed Python client is stale: run bin/generate-client and commit clients/python/"


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


def test_the_committed_client_is_generated_from_the_current_openapi_document(tmp_path):
    made = subprocess.run(
        [str(ROOT / "bin" / "generate-client"), str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert made.returncode == 0, made.stderr

    assert (tmp_path / "openapi.yaml").read_text() == (CLIENT / "openapi.yaml").read_text(), (
        f"{REGENERATE} (the OpenAPI document changed)"
    )
    fresh = _tree(tmp_path / "invoice_extraction_client" / "generated")
    committed = _tree(CLIENT / "invoice_extraction_client" / "generated")
    differing = sorted(name for name in fresh.keys() | committed.keys() if fresh.get(name) != committed.get(name))
    assert not differing, f"{REGENERATE} (files that differ: {', '.join(differing[:10])})"
