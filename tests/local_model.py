"""The real local model server for the tests that need a language model nobody here wrote.

``LocalModelServer`` runs ``llama-server`` with the verified weights on a free loopback port,
either directly or under ``manage.py local_model serve`` (the Procfile's supervisor), and reads
what the server reports. Its engine and weights come from ``bin/setup --with-local-model``; a
machine without them fails these tests with that instruction rather than skipping them.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import requests
from django.conf import settings

from extraction.providers.local import engine, server, telemetry, weights
from extraction.providers.local.catalog import ENGINE

ROOT = Path(__file__).resolve().parent.parent
SETUP_HINT = "run bin/setup --with-local-model (builds llama-server and installs the verified weights)"


def installed_config(**changes: Any) -> server.ServerConfig:
    """The settings' server configuration, after checking that engine and weights are installed."""
    config = server.ServerConfig.from_settings(settings.LOCAL_MODEL)
    binary = engine.binary_path(ENGINE, config.home)
    if not binary.is_file():
        raise RuntimeError(f"no llama-server at {binary}: {SETUP_HINT}")
    if not config.model_path.is_file() or config.model_path.stat().st_size != config.weights.size:
        raise RuntimeError(f"no verified weights at {config.model_path}: {SETUP_HINT}")
    return dataclasses.replace(config, **changes)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LocalModelServer:
    def __init__(self, config: server.ServerConfig, *, log_path: Path, supervised: bool = False) -> None:
        self.config = config
        self.log_path = log_path
        self.supervised = supervised
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return self.config.base_url

    def env(self) -> dict[str, str]:
        """What a process of the system needs to use this server as its local pool."""
        return {
            "EXTRACTION_PROVIDER": "local",
            "LOCAL_MODEL_HOME": str(self.config.home),
            "LOCAL_MODEL_WEIGHTS": self.config.weights.key,
            "LOCAL_MODEL_PORT": str(self.config.port),
            "LOCAL_MODEL_SLOTS": str(self.config.slots),
            "LOCAL_MODEL_CONTEXT_TOKENS": str(self.config.context_tokens),
            "LOCAL_MODEL_THREADS": str(self.config.threads),
        }

    def start(self, timeout: float = 180) -> LocalModelServer:
        if self.supervised:
            argv = [sys.executable, str(ROOT / "manage.py"), "local_model", "serve"]
        else:
            weights.verify(self.config.weights, self.config.model_path)
            argv = server.command(self.config)
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            argv,
            cwd=ROOT,
            env={**os.environ, "DJANGO_DEVELOPMENT": "1", **self.env()},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.wait_healthy(timeout)
        return self

    def wait_healthy(self, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"the model server exited ({self.process.returncode}):\n{self.log_tail()}")
            try:
                if requests.get(f"{self.base_url}/health", timeout=1).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"the model server did not become healthy in {timeout}s:\n{self.log_tail()}")

    def report(self) -> telemetry.ServerReport:
        report = telemetry.read(self.base_url)
        if report is None:
            raise AssertionError(f"the model server at {self.base_url} did not report")
        return report

    def engine_pid(self) -> int:
        """The llama-server process: the child of the supervisor, or the process itself."""
        assert self.process is not None
        if not self.supervised:
            return self.process.pid
        children = subprocess.run(
            ["pgrep", "-P", str(self.process.pid)], capture_output=True, text=True, check=False
        ).stdout.split()
        if len(children) != 1:
            raise AssertionError(f"the supervisor has children {children}")
        return int(children[0])

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return ""

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
