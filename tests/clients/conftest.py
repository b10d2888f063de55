"""The Python client (clients/python/) against the real server: a ``live_server`` on the test
database, a tenant's real token, and the system's processes where a job must run.

The client is imported from the repository, not from whatever copy site-packages holds, so
these tests check the code beside them."""

from __future__ import annotations

import sys

import pytest

from tests.delivery.conftest import loopback, scripted_erp  # noqa: F401  (fixtures the webhook tests use)
from tests.system import ROOT

CLIENT_ROOT = ROOT / "clients" / "python"
if str(CLIENT_ROOT) not in sys.path:
    sys.path.insert(0, str(CLIENT_ROOT))


@pytest.fixture(autouse=True)
def _isolated_broker(request):
    """Whatever a test here publishes goes to the test vhost, never the default one."""
    if "transactional_db" in request.fixturenames or "db" in request.fixturenames:
        request.getfixturevalue("broker")
