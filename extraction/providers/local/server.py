"""Runs ``llama-server`` on loopback with verified weights, and keeps it running.

The ``Procfile``'s ``model`` process is :func:`supervise`: under honcho one process's exit stops
them all, so a crashed server is restarted with backoff instead of ending the supervisor.
"""

from __future__ import annotations

import ipaddress
import logging
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from config.backoff import full_jitter
from extraction.providers.local import engine, weights
from extraction.providers.local.catalog import ENGINE, WEIGHTS, Weights

logger = logging.getLogger(__name__)

# A server that ran this long before exiting was healthy; the next restart starts backoff over.
_HEALTHY_RUN_SECONDS = 60.0


@dataclass(frozen=True)
class ServerConfig:
    home: Path
    weights: Weights
    host: str
    port: int
    slots: int
    context_tokens: int
    threads: int

    @classmethod
    def from_settings(cls, local_model: dict[str, Any]) -> ServerConfig:
        try:
            chosen = WEIGHTS[local_model["weights"]]
        except KeyError:
            raise ValueError(f"LOCAL_MODEL_WEIGHTS={local_model['weights']!r}; known: {', '.join(WEIGHTS)}") from None
        return cls(
            home=Path(local_model["home"]),
            weights=chosen,
            host=local_model["host"],
            port=int(local_model["port"]),
            slots=int(local_model["slots"]),
            context_tokens=int(local_model["context_tokens"]),
            threads=int(local_model["threads"]),
        )

    @property
    def model_path(self) -> Path:
        return self.home / "models" / self.weights.filename

    @property
    def packages_dir(self) -> Path:
        return self.home / "packages" / self.weights.key

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"


def command(config: ServerConfig) -> list[str]:
    """The server's command line. Loopback only: the server has no authentication."""
    if not ipaddress.ip_address(config.host).is_loopback:
        raise ValueError(f"the local model server listens on loopback only, not {config.host}")
    if config.slots < 1 or config.context_tokens < config.slots * 1024:
        raise ValueError(f"{config.context_tokens} context tokens cannot give {config.slots} slots 1024 each")
    return [
        str(engine.binary_path(ENGINE, config.home)),
        "--model", str(config.model_path),
        "--alias", config.weights.key,
        "--host", config.host,
        "--port", str(config.port),
        # Split evenly, not one unified cache: a slot's context is then a bound the pool can plan with.
        "--ctx-size", str(config.context_tokens), "--parallel", str(config.slots), "--no-kv-unified",
        "--threads", str(config.threads),
        "--jinja",  # the GGUF's own chat template
        "--metrics", "--slots", "--no-webui",
    ]  # fmt: skip


def install(config: ServerConfig, *, log: engine.Log = print) -> None:
    """Builds the engine (cached) and assembles the verified weights (cached)."""
    engine.ensure_built(ENGINE, config.home, log=log)
    with engine.exclusive(config.home, "weights"):
        try:
            weights.verify(config.weights, config.model_path)
            return
        except weights.WeightsError:
            pass
        log(f"installing {config.weights.description} ({config.weights.size / 2**30:.2f} GiB)")
        weights.install_packages(config.weights, config.packages_dir)
        weights.assemble(config.weights, config.packages_dir, config.model_path)
    log(f"verified {config.model_path} (sha256 {config.weights.sha256[:16]}…)")


def supervise(config: ServerConfig, *, stop: threading.Event | None = None) -> None:
    """Serves until SIGTERM/SIGINT (or ``stop``), restarting a server that exits."""
    stop = stop or threading.Event()
    weights.verify(config.weights, config.model_path)  # refuse to serve anything else
    argv = command(config)
    child: subprocess.Popen[bytes] | None = None

    def _terminate(_signum: int, _frame: FrameType | None) -> None:
        stop.set()
        if child is not None and child.poll() is None:
            child.send_signal(signal.SIGTERM)

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)
        signal.signal(signal.SIGINT, _terminate)
    failures = 0
    while not stop.is_set():
        started = time.monotonic()
        child = subprocess.Popen(argv)
        while child.poll() is None and not stop.wait(0.5):
            pass
        if stop.is_set():
            if child.poll() is None:
                child.terminate()
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
            return
        failures = 1 if time.monotonic() - started > _HEALTHY_RUN_SECONDS else failures + 1
        delay = full_jitter(failures, base=1.0, cap=30.0)
        logger.warning(
            "local model server exited; restarting",
            extra={"returncode": child.returncode, "restart_in_seconds": round(delay, 2)},
        )
        stop.wait(delay)
