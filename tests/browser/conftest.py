"""The real system for browser tests: the web app (pytest-django's live server, in this
process), daphne (WebSocket), the notifier, the outbox relay, Celery workers and the
scheduler (subprocesses), all on the test database, with the built-in extractor; and
Debian's chromium driven by Playwright (never a downloaded browser)."""

from __future__ import annotations

import socket
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from accounts.models import Membership, Role
from tests.browser.support import PASSWORD
from tests.factories import make_tenant, unique_slug
from tests.system import VENV_BIN, SystemProcesses, system_env

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on port {port}")


@pytest.fixture
def system(transactional_db, broker, settings, tmp_path):
    """Pipeline processes without the socket server; ``system.daphne()`` adds it."""
    group = SystemProcesses(
        env=system_env(broker_url=broker, simulator_url=None, media_root=Path(settings.MEDIA_ROOT)),
        log_dir=tmp_path,
    )
    group.relay()
    group.celery("workers", "ingress,llm", concurrency=4)
    group.scheduler()
    group.start("notifier", [sys.executable, "manage.py", "run_notifier", "--poll", "0.5"])
    yield SocketServer(group, settings)
    group.stop_all()


@dataclass
class SocketServer:
    processes: SystemProcesses
    settings: object
    port: int | None = None

    def daphne(self) -> int:
        self.port = free_port()
        self.processes.start(
            "daphne", [str(VENV_BIN / "daphne"), "-b", "127.0.0.1", "-p", str(self.port), "config.asgi:application"]
        )
        wait_for_port(self.port)
        # The live server (this process) hands this URL to the browser with each ticket.
        self.settings.NOTIFY_WS_PORT = self.port
        return self.port


@pytest.fixture
def member(transactional_db):
    tenant = make_tenant(unique_slug("web"))
    user = get_user_model().objects.create_user(username=f"web-{uuid.uuid4().hex[:8]}", password=PASSWORD)
    Membership.objects.create(user=user, tenant=tenant, role=Role.REVIEWER)
    return user


@pytest.fixture
def browser_page():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        context = browser.new_context()
        page = context.new_page()
        page.set_default_timeout(20_000)
        yield page
        context.close()
        browser.close()
