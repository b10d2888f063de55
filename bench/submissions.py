"""Load through the HTTP API, open loop, as a client sends it: when each submission is due
(:class:`Arrivals`, at a base rate with :class:`Burst` windows), which real sample invoice it
carries (:class:`DocumentMix` over :func:`document_kinds`, shares from :func:`parse_mix`), and the
:class:`OpenLoopAccepter` that uploads the document and creates its job at the due time, on
loopback, timing each :class:`Submission` from then and trying a retryable answer again with the
same Idempotency-Key.

The load of the load report (tests/acceptance/load.py) and of the fault suite
(tests/acceptance/faults.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.loadgen import check_loopback

INVOICES = Path(__file__).resolve().parent.parent / "testdata" / "invoices"


# --- the arrivals --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Burst:
    """``RATE:SECONDS@OFFSET``: submissions arrive at RATE per second (instead of the base rate)
    from OFFSET for SECONDS."""

    rate: float
    seconds: float
    offset: float

    @classmethod
    def parse(cls, text: str) -> Burst:
        try:
            rate, rest = text.split(":", 1)
            seconds, offset = rest.split("@", 1)
            burst = cls(float(rate), float(seconds), float(offset))
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"{text!r} is not RATE:SECONDS@OFFSET (e.g. 20:30@120)") from exc
        if burst.rate <= 0 or burst.seconds <= 0 or burst.offset < 0:
            raise argparse.ArgumentTypeError(f"{text!r}: rate and seconds must be positive, offset >= 0")
        return burst

    def covers(self, t: float) -> bool:
        return self.offset <= t < self.offset + self.seconds


@dataclass(frozen=True)
class Arrivals:
    """When submission *i* is due, as an offset from the start: a Poisson process (exponential
    gaps, seeded) or evenly spaced, at the base rate or a burst's while it lasts."""

    rate: float
    bursts: tuple[Burst, ...] = ()
    process: str = "poisson"
    seed: int = 1

    def rate_at(self, t: float) -> float:
        for burst in self.bursts:
            if burst.covers(t):
                return burst.rate
        return self.rate

    def _next_change(self, t: float) -> float:
        edges = [e for b in self.bursts for e in (b.offset, b.offset + b.seconds) if e > t]
        return min(edges, default=math.inf)

    def offsets(self, until: float = math.inf) -> Iterator[float]:
        """Due times in [0, until); endless when ``until`` is infinite."""
        rng = random.Random(self.seed)
        t = 0.0
        if self.process == "uniform" and until > 0:
            yield t  # an even schedule starts at once, as bench/loadgen.py's does
        while t < until:
            rate, change = self.rate_at(t), self._next_change(t)
            gap = rng.expovariate(rate) if self.process == "poisson" else 1.0 / rate
            if t + gap >= change:
                # The rate changes before the next arrival: a Poisson process is memoryless, so
                # starting afresh at the change is exact; an even schedule starts the new rate there.
                t = change
                if self.process == "uniform" and t < until:
                    yield t
                continue
            t += gap
            if t < until:
                yield t

    def describe(self) -> str:
        kind = f"Poisson (exponential gaps, seed {self.seed})" if self.process == "poisson" else "evenly spaced"
        text = f"{kind} at {self.rate:g} submissions/s"
        for burst in self.bursts:
            text += f"; burst of {burst.rate:g}/s for {burst.seconds:g} s from t = {burst.offset:g} s"
        return text


# --- the documents -------------------------------------------------------------------------------


@dataclass(frozen=True)
class DocumentKind:
    name: str
    description: str
    paths: tuple[str, ...]  # relative to testdata/invoices


def _listed(*patterns: str, limit: int | None = None) -> tuple[str, ...]:
    found = sorted({str(p.relative_to(INVOICES)) for pattern in patterns for p in INVOICES.glob(pattern)})
    return tuple(found[:limit] if limit else found)


def document_kinds() -> dict[str, DocumentKind]:
    """The real sample invoices a run submits, by how the service reads them. PNGs are left out:
    OCR on these two cores would measure Tesseract, not the pipeline."""
    kinds = [
        DocumentKind(
            "pdf",
            "supplier PDFs with a text layer (invoice2data), read and sent to the model",
            tuple(p for p in _listed("invoice2data/compare/*.pdf") if not p.endswith("AzureInterior.pdf")),
        ),
        DocumentKind(
            "text",
            "plain-text invoices, French and Turkish (written/), sent to the model",
            _listed("written/*.txt", "invoice2data/compare/*.txt"),
        ),
        DocumentKind(
            "facturx",
            "Factur-X/ZUGFeRD PDFs, answered from their embedded XML (no model call)",
            _listed("zugferd-corpus/XML-Rechnung/FX/EN16931_*.pdf", limit=8)
            + _listed("invoice2data/compare/AzureInterior.pdf"),
        ),
        DocumentKind(
            "xml",
            "UBL / CII e-invoices (XRechnung, EN 16931, UBL-TR), answered from the XML (no model call)",
            _listed("xrechnung-testsuite/business-cases/standard/*_ubl.xml", limit=4)
            + _listed("xrechnung-testsuite/business-cases/standard/*_uncefact.xml", limit=4)
            + _listed("ubl-tr/*.xml"),
        ),
    ]
    return {kind.name: kind for kind in kinds if kind.paths}


DEFAULT_MIX = {"pdf": 0.5, "text": 0.25, "facturx": 0.15, "xml": 0.10}


def parse_mix(text: str) -> dict[str, float]:
    """``pdf=0.5,text=0.25,...``: the share of each document kind."""
    mix: dict[str, float] = {}
    for item in text.split(","):
        name, _, share = item.partition("=")
        try:
            mix[name.strip()] = float(share)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"{item!r} is not KIND=SHARE") from exc
    known = set(DEFAULT_MIX)
    if not set(mix) <= known or sum(mix.values()) <= 0 or min(mix.values()) < 0:
        raise argparse.ArgumentTypeError(f"a mix is KIND=SHARE,... over {', '.join(sorted(known))}")
    return mix


@dataclass(frozen=True)
class SampleDocument:
    kind: str
    path: str
    content: bytes


class DocumentMix:
    """Picks the document of each submission: its kind by the mix's shares (seeded), then the
    kind's files in turn. A file submitted again is the same document (the service keys
    documents by digest), so its text is extracted once, as for a supplier sending the same
    invoice twice; each submission is its own job."""

    def __init__(self, shares: dict[str, float], *, seed: int = 1) -> None:
        kinds = document_kinds()
        self.shares = {name: share for name, share in shares.items() if share > 0 and name in kinds}
        self.kinds = {name: kinds[name] for name in self.shares}
        self._files = {
            name: [SampleDocument(name, path, (INVOICES / path).read_bytes()) for path in kind.paths]
            for name, kind in self.kinds.items()
        }
        self._turn: Counter[str] = Counter()
        self._rng = random.Random(seed)
        self._names = list(self.shares)
        self._weights = [self.shares[name] for name in self._names]

    def next(self) -> SampleDocument:
        name = self._rng.choices(self._names, self._weights)[0]
        files = self._files[name]
        document = files[self._turn[name] % len(files)]
        self._turn[name] += 1
        return document

    def describe(self) -> list[dict[str, Any]]:
        total = sum(self.shares.values())
        return [
            {
                "kind": name,
                "share": round(self.shares[name] / total, 3),
                "files": len(self._files[name]),
                "description": kind.description,
                "examples": [Path(p).name for p in kind.paths[:3]],
            }
            for name, kind in self.kinds.items()
        ]


# --- the HTTP client -----------------------------------------------------------------------------

HOST = "127.0.0.1"  # the load goes to loopback only (checked: bench/loadgen.check_loopback)


@dataclass(frozen=True)
class HttpAnswer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body or b"null")


async def http_call(
    port: int, method: str, path: str, *, headers: dict[str, str], body: bytes, timeout: float
) -> HttpAnswer:
    """One request on its own connection (``Connection: close``, read to EOF), as gunicorn's
    sync workers answer anyway; loopback only."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    reader, writer = await asyncio.wait_for(asyncio.open_connection(HOST, port), timeout=timeout)
    try:
        lines = [f"{method} {path} HTTP/1.1", f"Host: {HOST}:{port}", "Connection: close"]
        lines += [f"Content-Length: {len(body)}"] + [f"{name}: {value}" for name, value in headers.items()]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        raw = await asyncio.wait_for(reader.read(), timeout=max(0.001, deadline - loop.time()))
    finally:
        writer.close()
    head, _, payload = raw.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parts = status_line.split()
    if len(parts) < 2 or not parts[1].isdigit():
        raise ConnectionError(f"not an HTTP response: {status_line[:80]!r}")
    answer_headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        answer_headers[name.strip().lower()] = value.strip()
    return HttpAnswer(int(parts[1]), answer_headers, payload)


def multipart(filename: str, content: bytes) -> tuple[str, bytes]:
    boundary = uuid.uuid4().hex
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{filename}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        + content
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return f"multipart/form-data; boundary={boundary}", body


# --- the open-loop accepter ----------------------------------------------------------------------

# What a client tries again, with the same Idempotency-Key: overload answers, server errors and
# a broken or silent connection (the job may have been committed; the replay says so).
RETRYABLE = {408, 409, 425, 429, 500, 502, 503, 504}


@dataclass
class Submission:
    """One submission: due at ``due`` (epoch seconds), done when its job was accepted (202) or
    given up; ``status`` is the last answer (or the error's name)."""

    index: int
    kind: str
    path: str
    key: str
    due: float
    started: float = 0.0
    done: float | None = None
    status: str = "pending"
    tries: int = 0
    job_id: str | None = None
    replayed: bool = False

    @property
    def accepted(self) -> bool:
        return self.status == "202"

    @property
    def latency(self) -> float:
        return (self.done - self.due) if self.accepted and self.done is not None else math.inf


class OpenLoopAccepter:
    """Submits a document and its job at each due time, whatever the answers before it.

    1. Submission *i* is due at ``t0 + offset_i``; the thread's event loop starts it then (late
       starts are counted against it: the latency runs from the due time).
    2. It uploads the document (``POST /api/v1/documents``), then creates the job
       (``POST /api/v1/extraction-jobs``, its own Idempotency-Key). A retryable answer or a
       broken connection is tried again (up to ``tries`` times, after ``Retry-After`` capped
       at 2 s, or 0.5 s), with the same key.
    3. At most ``max_in_flight`` submissions are open; a due one waiting for a slot keeps its clock.
    4. ``stop()`` ends the schedule; ``join(grace)`` lets the open submissions finish that long.
    """

    def __init__(
        self,
        *,
        port: int,
        token: str,
        mix: DocumentMix,
        offsets: Iterable[float],
        schema: str = "invoice.v1",
        max_in_flight: int = 256,
        request_timeout: float = 15.0,
        tries: int = 3,
    ) -> None:
        check_loopback(HOST)
        self.port = port
        self.token = token
        self.mix = mix
        self.offsets = iter(offsets)
        self.schema = schema
        self.max_in_flight = max_in_flight
        self.request_timeout = request_timeout
        self.tries = tries
        self.submissions: list[Submission] = []
        self.t0 = 0.0
        self.run_id = uuid.uuid4().hex[:10]
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._scheduled = threading.Event()

    def start(self, t0: float) -> None:
        self.t0 = t0
        self._thread = threading.Thread(target=self._run, name="accepter", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def join(self, grace: float) -> None:
        """Wait for the schedule to end, then up to ``grace`` for open submissions; what is
        still open then is given up (``timeout``)."""
        self._scheduled.wait()
        deadline = time.monotonic() + grace
        while self._tasks and time.monotonic() < deadline:
            time.sleep(0.1)
        if self._loop is not None and self._tasks:
            for task in list(self._tasks):
                self._loop.call_soon_threadsafe(task.cancel)
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _run(self) -> None:
        self._loop = asyncio.new_event_loop()
        try:
            self._loop.run_until_complete(self._schedule())
        finally:
            self._loop.close()

    async def _schedule(self) -> None:
        slots = asyncio.Semaphore(self.max_in_flight)
        try:
            for index, offset in enumerate(self.offsets):
                if self._stop.is_set():
                    break
                due = self.t0 + offset
                while (delay := due - time.time()) > 0:
                    if self._stop.is_set():
                        break
                    await asyncio.sleep(min(delay, 0.5))
                if self._stop.is_set():
                    break
                document = self.mix.next()
                submission = Submission(index, document.kind, document.path, f"load-{self.run_id}-{index}", due)
                self.submissions.append(submission)
                task = asyncio.get_running_loop().create_task(self._submit(submission, document, slots))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        finally:
            self._scheduled.set()
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def _submit(self, submission: Submission, document: SampleDocument, slots: asyncio.Semaphore) -> None:
        try:
            async with slots:
                submission.started = time.time()
                document_id = await self._with_tries(submission, self._upload, document)
                if document_id is not None:
                    await self._with_tries(submission, self._create, document_id)
        except asyncio.CancelledError:
            submission.status = "timeout"
        submission.done = time.time()

    async def _with_tries(self, submission: Submission, step: Any, argument: Any) -> Any:
        for attempt in range(self.tries):
            submission.tries += 1
            try:
                answer = await step(submission, argument)
            except (OSError, TimeoutError, ConnectionError) as exc:
                submission.status = type(exc).__name__
                wait = 0.5
            else:
                submission.status = str(answer.status)
                if answer.status in (201, 202):
                    return answer.json()
                if answer.status not in RETRYABLE:
                    return None
                wait = _retry_after(answer.headers.get("retry-after"))
            if attempt + 1 < self.tries:
                await asyncio.sleep(wait)
        return None

    async def _upload(self, submission: Submission, document: SampleDocument) -> HttpAnswer:
        content_type, body = multipart(Path(document.path).name, document.content)
        answer = await http_call(
            self.port,
            "POST",
            "/api/v1/documents",
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": content_type},
            body=body,
            timeout=self.request_timeout,
        )
        return answer

    async def _create(self, submission: Submission, document: dict[str, Any]) -> HttpAnswer:
        body = json.dumps({"document_id": document["id"], "schema": self.schema}).encode()
        answer = await http_call(
            self.port,
            "POST",
            "/api/v1/extraction-jobs",
            headers={
                "Authorization": f"Bearer {self.token}",
                "Content-Type": "application/json",
                "Idempotency-Key": submission.key,
            },
            body=body,
            timeout=self.request_timeout,
        )
        if answer.status == 202:
            submission.job_id = answer.json()["job_id"]
            submission.replayed = answer.headers.get("idempotent-replayed") == "true"
        return answer


def _retry_after(value: str | None) -> float:
    try:
        return min(2.0, max(0.05, float(value))) if value else 0.5
    except ValueError:
        return 0.5
