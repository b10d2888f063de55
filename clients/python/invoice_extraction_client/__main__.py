"""``python -m invoice_extraction_client submit FILE…``: submit the files as a batch (a job
for each), wait until they settle and print each job's state, gross total and review reasons.

The batch's key is ``--key-prefix`` + a digest of the files, so running it again over the same
files prints the jobs accepted the first time ("submitted by an earlier run") instead of
submitting them again.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

from invoice_extraction_client.client import Client, FailedFile, Job
from invoice_extraction_client.errors import WaitTimeout


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m invoice_extraction_client")
    commands = parser.add_subparsers(dest="command", required=True)
    submit = commands.add_parser("submit", help="submit files as a batch (a job for each), wait for them")
    submit.add_argument("files", nargs="+")
    submit.add_argument("--base-url", default="http://127.0.0.1:8000")
    submit.add_argument("--token", required=True)
    submit.add_argument("--schema", default="invoice.v2", choices=["invoice.v1", "invoice.v2"])
    submit.add_argument("--key-prefix", default="batch-", help="Idempotency-Key prefix (default %(default)s)")
    submit.add_argument("--timeout", type=float, default=180, help="seconds to wait for the jobs (default %(default)s)")
    return parser.parse_args(argv)


def _summary(job: Job) -> str:
    body: dict[str, Any] = job.detail.to_dict() if job.detail is not None else {}
    result = body.get("result") or {}
    gross = (((result.get("output") or {}).get("totals") or {}).get("gross") or {}).get("value")
    reasons = ",".join((result.get("validation") or {}).get("reasons") or [])
    return f"gross={gross} {reasons}".rstrip()


def main(argv: Sequence[str] | None = None) -> int:
    args = _arguments(argv)
    failed = 0
    with Client(args.base_url, args.token) as client:
        items = client.submit_batch(args.files, idempotency_prefix=args.key_prefix, schema=args.schema)
        for item in items:
            if isinstance(item, FailedFile):
                failed += 1
                print(f"refused  {item.path.name}: {item.error}")
                continue
            earlier = " (submitted by an earlier run)" if item.job.replayed else ""
            print(f"accepted {item.path.name}: {item.job.status_url}{earlier}")
        print()
        deadline = time.monotonic() + args.timeout  # for all the jobs together
        for item in items:
            if isinstance(item, FailedFile):
                continue
            try:
                job = client.wait(item.job, timeout=max(0.0, deadline - time.monotonic()))
            except WaitTimeout as exc:
                failed += 1
                state = exc.job.state.value if exc.job is not None else "unknown"
                print(f"{state:<16} {item.path.name:<36} (not settled after {args.timeout:g} s)")
                continue
            print(f"{job.state.value:<16} {item.path.name:<36} {_summary(job)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
