"""Builds ``llama-server`` once per engine version and flag set, into a cache a new clone reuses.

The build takes minutes on two cores, so its product is kept under the local-model home, keyed
by :attr:`catalog.Engine.key`; a warm machine finds the binary and builds nothing.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from extraction.providers.local.catalog import Engine

BINARY = "llama-server"
Log = Callable[[str], object]
_READ_SIZE = 1 << 20


class EngineError(RuntimeError):
    pass


def binary_path(engine: Engine, home: Path) -> Path:
    return home / "engine" / engine.key / BINARY


@contextmanager
def exclusive(home: Path, name: str) -> Iterator[None]:
    """One installer at a time per step: two setups racing would build or join twice."""
    home.mkdir(parents=True, exist_ok=True)
    with (home / f".{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def ensure_built(engine: Engine, home: Path, *, jobs: int | None = None, log: Log = print) -> Path:
    """The cached binary, building it first if this version and flag set was never built."""
    target = binary_path(engine, home)
    with exclusive(home, "engine"):
        if target.is_file() and os.access(target, os.X_OK):
            return target
        with tempfile.TemporaryDirectory(prefix="llama-build-", dir=home) as scratch:
            work = Path(scratch)
            source = _download_source(engine, work, log=log)
            tree = _unpack(source, work)
            build = work / "build"
            log(f"building {engine.key} (several minutes on two cores)")
            _run(["cmake", "-S", str(tree), "-B", str(build), *engine.cmake_flags], work / "configure.log")
            _run(
                ["cmake", "--build", str(build), "--target", BINARY, "-j", str(jobs or os.cpu_count() or 2)],
                work / "build.log",
            )
            staged = target.parent.with_name(target.parent.name + ".partial")
            shutil.rmtree(staged, ignore_errors=True)
            staged.mkdir(parents=True)
            shutil.copy2(build / "bin" / BINARY, staged / BINARY)
            shutil.copy2(tree / "LICENSE", staged / "LICENSE")
            shutil.rmtree(target.parent, ignore_errors=True)
            staged.replace(target.parent)
    return target


def _download_source(engine: Engine, work: Path, *, log: Log) -> Path:
    """The engine's source distribution, through ``pip download`` (the index, mirror and proxy
    pip is configured with: no host is written here), hash-checked by pip and again here."""
    log(f"downloading {engine.project}=={engine.version} (source) through pip")
    dest = work / "source"
    requirements = work / "source-requirement.txt"
    requirements.write_text(engine.requirement + "\n")
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--disable-pip-version-check",
        "--no-deps",
        "--no-binary",
        engine.project,
        "--require-hashes",
        "--requirement",
        str(requirements),
        "--dest",
        str(dest),
    ]
    _run(command, work / "download.log")
    archives = sorted(dest.glob("*.tar.gz"))
    if len(archives) != 1:
        raise EngineError(f"pip download left {[p.name for p in archives]} in {dest}, expected one source archive")
    digest = hashlib.sha256()
    with archives[0].open("rb") as archive:
        while block := archive.read(_READ_SIZE):
            digest.update(block)
    if digest.hexdigest() != engine.source_sha256:
        raise EngineError(f"{archives[0].name}: sha256 {digest.hexdigest()}, expected {engine.source_sha256}")
    return archives[0]


def _unpack(source: Path, work: Path) -> Path:
    with tarfile.open(source) as archive:
        archive.extractall(work, filter="data")
    trees = [p for p in work.iterdir() if p.is_dir() and (p / "vendor" / "llama.cpp" / "CMakeLists.txt").is_file()]
    if len(trees) != 1:
        raise EngineError(f"{source.name} does not contain vendor/llama.cpp")
    return trees[0] / "vendor" / "llama.cpp"


def _run(command: list[str], log_path: Path) -> None:
    with log_path.open("wb") as log_file:
        completed = subprocess.run(command, stdout=log_file, stderr=subprocess.STDOUT, check=False)
    if completed.returncode != 0:
        tail = log_path.read_text(errors="replace").splitlines()[-30:]
        raise EngineError(f"{' '.join(command[:3])} failed ({completed.returncode}):\n" + "\n".join(tail))
