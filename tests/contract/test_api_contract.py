"""The API answers as its OpenAPI schema says.

schemathesis runs every check (tests/contract/schemathesis.toml says where one expects what the
API rightly does not answer) against the schema gunicorn serves at /api/schema/, with a fixed
seed and a bounded number of examples per operation, as one tenant's admin token, with a second
tenant's token to prove neither sees the other's objects. Only loopback is called: the webhook
URL generated bodies register is a loopback literal, and no worker runs, so accepted jobs and
webhook verifications wait in the outbox and the broker.
"""

from __future__ import annotations

import json
import socket
import subprocess
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from delivery import egress
from tests.factories import TenantContext, make_document, make_tenant_context
from tests.system import VENV_BIN, SystemProcesses, system_env, wait_for

pytestmark = pytest.mark.slow

CONFIG = Path(__file__).with_name("schemathesis.toml")
SEED = 20260815
MAX_EXAMPLES = 20
# The one URL generated registrations use: loopback, and a literal address, so vetting it looks
# no name up.
WEBHOOK_URL = "http://127.0.0.1:9/contract-webhook"
# A safety net far above a normal run (about a minute), not its budget: the examples bound that.
RUN_TIMEOUT_SECONDS = 480


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _healthy(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/healthz", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


@pytest.fixture
def api(transactional_db, broker, settings, tmp_path):
    """gunicorn serving the test database, as the Procfile's web process does, where loopback
    webhook URLs may be registered (EGRESS_ALLOW_LOOPBACK, the development switch)."""
    port = _free_port()
    base_url = f"http://127.0.0.1:{port}"
    group = SystemProcesses(
        env=system_env(
            broker_url=broker, simulator_url=None, media_root=Path(settings.MEDIA_ROOT), EGRESS_ALLOW_LOOPBACK="1"
        ),
        log_dir=tmp_path,
    )
    group.start(
        "web",
        [str(VENV_BIN / "gunicorn"), "config.wsgi", "--workers", "2", "--threads", "4", "--bind", f"127.0.0.1:{port}"],
    )
    try:
        wait_for(lambda: _healthy(base_url), timeout=60, message=group.logs)
        yield base_url, group
    finally:
        group.stop_all()


def _wfc_auth_file(path: Path, tenants: dict[str, TenantContext]) -> Path:
    entries = [
        {"name": name, "fixedHeaders": [{"name": "Authorization", "value": f"Bearer {tenant.token}"}]}
        for name, tenant in tenants.items()
    ]
    path.write_text(json.dumps({"schemaVersion": "0.1.0", "auth": entries}))
    return path


def _looked_up_names(har: dict) -> list[str]:
    """The host names vetting a generated webhook URL would have resolved (the egress rule
    itself, with a resolver that records and refuses)."""
    names: list[str] = []

    def record(host: str, *_args: object) -> list:
        names.append(host)
        raise socket.gaierror(f"{host}: not looked up in the contract run")

    for entry in har["log"]["entries"]:
        request = entry["request"]
        if not urlsplit(request["url"]).path.startswith("/api/v1/webhook-endpoints"):
            continue
        try:
            body = json.loads(request.get("postData", {}).get("text") or "null")
        except ValueError:
            continue
        url = body.get("url") if isinstance(body, dict) else None
        if isinstance(url, str):
            try:
                egress.vet_url(url, resolver=record, allow_loopback=True)
            except egress.EgressRefused:
                pass
    return names


def test_the_api_answers_as_its_openapi_schema_says(api, tmp_path):
    base_url, web = api
    tenants = {"tenant-a": make_tenant_context(), "tenant-b": make_tenant_context()}
    document = make_document(tenants["tenant-a"].tenant)
    har_path = tmp_path / "requests.har"
    env = {
        **web.env,
        "CONTRACT_BASE_URL": base_url,
        "CONTRACT_AUTH_FILE": str(_wfc_auth_file(tmp_path / "auth.json", tenants)),
        "CONTRACT_DOCUMENT_ID": str(document.pk),
        "CONTRACT_WEBHOOK_URL": WEBHOOK_URL,
    }

    run = subprocess.run(
        [
            str(VENV_BIN / "schemathesis"),
            "--config-file",
            str(CONFIG),
            "--no-color",
            "run",
            f"{base_url}/api/schema/",
            "--seed",
            str(SEED),
            "--max-examples",
            str(MAX_EXAMPLES),
            "--report",
            "har",
            "--report-har-path",
            str(har_path),
        ],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_SECONDS,
        cwd=tmp_path,
        env=env,
    )

    # The report names each failure with the request that reproduces it (curl) and the answer.
    assert run.returncode == 0, f"schemathesis found failures:\n{run.stdout[-40_000:]}\n{run.stderr[-4_000:]}"
    har = json.loads(har_path.read_text())
    assert {urlsplit(entry["request"]["url"]).netloc for entry in har["log"]["entries"]} == {urlsplit(base_url).netloc}
    assert _looked_up_names(har) == []
