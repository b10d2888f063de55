"""A handle for tests and benchmarks: the simulator in a subprocess, driven over its HTTP control."""

from __future__ import annotations

import json
import os
import re
import selectors
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.simulator.config import SimulatorConfig

_MANAGE_PY = Path(__file__).resolve().parents[2] / "manage.py"
# Control calls go straight to loopback, whatever proxy the environment names.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))
_READY = re.compile(r"listening on (http://\S+)")


class SimulatorProcess:
    """``python manage.py run_provider_simulator`` in a subprocess on a free loopback port.

    with SimulatorProcess(latency_mean_seconds=15, latency_p95_seconds=40, time_scale=0.01) as sim:
        provider = OpenAIProvider(base_url=sim.base_url, api_key="test")
        sim.control(error_next=3)
        sim.stats()["calls_by_job"]
    """

    def __init__(self, startup_timeout_seconds: float = 30.0, **settings: Any) -> None:
        SimulatorConfig().updated({k: v for k, v in settings.items() if not k.endswith("_next")})
        self.settings = settings
        self.startup_timeout_seconds = startup_timeout_seconds
        self.process: subprocess.Popen[str] | None = None
        self.root_url = ""

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    def __enter__(self) -> SimulatorProcess:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> None:
        command = [sys.executable, str(_MANAGE_PY), "run_provider_simulator", "--port", "0"]
        for name, value in self.settings.items():
            command += [f"--{name.replace('_', '-')}", str(value)]
        env = {**os.environ, "DJANGO_DEVELOPMENT": os.environ.get("DJANGO_DEVELOPMENT", "1")}
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env, cwd=_MANAGE_PY.parent)
        self.root_url = self._wait_until_listening()

    def _wait_until_listening(self) -> str:
        assert self.process is not None and self.process.stdout is not None
        deadline = time.monotonic() + self.startup_timeout_seconds
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            while (remaining := deadline - time.monotonic()) > 0:
                if not selector.select(remaining):
                    break
                line = self.process.stdout.readline()
                if not line:
                    self.stop()
                    raise RuntimeError("provider simulator exited before listening")
                if match := _READY.search(line):
                    return match.group(1)
        self.stop()
        raise RuntimeError(f"provider simulator not listening after {self.startup_timeout_seconds} s")

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        self.process = None

    def control(self, **settings: Any) -> dict[str, Any]:
        return self._post("/_control", settings)

    def reset(self) -> dict[str, Any]:
        return self._post("/_reset", {})

    def stats(self) -> dict[str, Any]:
        with _DIRECT.open(f"{self.root_url}/_stats", timeout=10) as response:
            return json.load(response)

    def _post(self, path: str, payload: Mapping[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(
            f"{self.root_url}{path}",
            data=json.dumps(payload).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with _DIRECT.open(request, timeout=10) as response:
            return json.load(response)
