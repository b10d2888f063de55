"""The model as second reader of bundle boundaries: does it decide the detector's narrow junctions
better than the detector?

    .venv/bin/python eval/bundle_second_reader.py [--limit N] [--base-url URL] [--json PATH]

1. Builds eval/bundles.py's text bundles (seed 27) and blanks every printed page number, as a scan
   batch that prints none: where the detector is least sure (73 of 100 bundles have a junction it
   decided narrowly, against 1 with the numbers printed).
2. Takes the bundles with an uncertain junction, up to ``--limit`` (default 20), families in turn.
3. For each, asks the model the product's question (extraction.providers.boundaries, through
   ``OpenAIProvider.read_boundaries`` with the local pool's settings) and splits again with its
   answer deciding the uncertain junctions (``split_bundle(..., second_reading=...)``), exactly
   as the worker does with ``bundle_second_reader`` on.
4. Scores both against the invoices each bundle was built from: page-boundary precision, recall
   and F1 of the detector alone and with the second reader, the uncertain junctions each got
   right, the parts holding two invoices' pages, and the model's tokens, latency and failures.

Needs the local model server (``manage.py local_model serve``, 127.0.0.1:8200 by default) or any
OpenAI-compatible server at ``--base-url``. No database. Prints Markdown and writes it with the
figures as JSON (``bench/results/bundle-second-reader-<UTC time>.{txt,json}``).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "eval"))

import bundles as bundle_eval  # noqa: E402  (eval/bundles.py: sets Django up, no database)
from django.conf import settings  # noqa: E402

from bench import harness  # noqa: E402
from extraction.intake.bundles import split_bundle  # noqa: E402
from extraction.providers.base import ProviderError  # noqa: E402
from extraction.providers.boundaries import BoundaryAnswerError, BoundaryRequest, parse_answer  # noqa: E402
from extraction.providers.openai_compat import OpenAIProvider  # noqa: E402

TIMEOUT_SECONDS = 900.0


def candidates(limit: int) -> list[tuple[Any, tuple[str, ...]]]:
    """(bundle, its pages with the page numbers blanked) for bundles the detector is unsure of,
    families in turn so that a small limit still sees each."""
    invoices = bundle_eval.sample_invoices()
    bundles = bundle_eval.build_bundles(invoices, mixed=40, scanned=0, seed=27)
    by_family: dict[str, list[tuple[Any, tuple[str, ...]]]] = defaultdict(list)
    for bundle in bundles:
        visible = bundle_eval.read_as_worker(bundle_eval.bundle_pdf(bundle)).for_providers().pages
        blanked = tuple(bundle_eval.blank_page_numbers(page) for page in visible)
        if split_bundle(blanked).uncertain:
            by_family[bundle.family].append((bundle, blanked))
    chosen: list[tuple[Any, tuple[str, ...]]] = []
    while len(chosen) < limit and any(by_family.values()):
        for family in list(by_family):
            if by_family[family] and len(chosen) < limit:
                chosen.append(by_family[family].pop(0))
    return chosen


def ask(provider: OpenAIProvider, model: str, bundle: Any, pages: tuple[str, ...]) -> dict[str, Any]:
    alone = split_bundle(pages)
    truth = set(bundle.starts[1:])
    request = BoundaryRequest(job_id=bundle.name, attempt=1, pages=pages, model=model, timeout_seconds=TIMEOUT_SECONDS)
    started = time.monotonic()
    record: dict[str, Any] = {"bundle": bundle.name, "family": bundle.family, "truth": sorted(truth)}
    try:
        response = provider.read_boundaries(request)
        first_pages = parse_answer(response.output_text, page_count=len(pages))
        record.update(
            answer=sorted(first_pages),
            input_tokens=response.input_tokens,
            output_tokens=response.output_tokens,
        )
    except (ProviderError, BoundaryAnswerError) as error:
        first_pages = None
        record["error"] = f"{type(error).__name__}: {error}"[:300]
    record["seconds"] = round(time.monotonic() - started, 1)
    read_twice = split_bundle(pages, second_reading=first_pages)
    uncertain = [junction.page for junction in alone.junctions if junction.uncertain]
    record.update(
        uncertain=uncertain,
        detector_right=sum((page in truth) == (page in alone.boundaries) for page in uncertain),
        model_right=sum((page in truth) == (page in read_twice.boundaries) for page in uncertain),
        detector=bundle_eval.score(bundle, alone),
        with_model=bundle_eval.score(bundle, read_twice),
    )
    return record


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=20, help="bundles asked about (20)")
    local = settings.LOCAL_MODEL
    parser.add_argument("--base-url", default=f"http://{local['host']}:{local['port']}/v1")
    parser.add_argument("--model", default=local["weights"])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    provider = OpenAIProvider(
        base_url=args.base_url,
        api_key="not-needed",
        token_limit_parameter="max_tokens",
        structured_output="json_schema",
        sampling={"temperature": 0, "repeat_penalty": 1.0},
        name="llama.cpp",
    )
    started = time.monotonic()
    records = [ask(provider, args.model, bundle, pages) for bundle, pages in candidates(args.limit)]
    alone = bundle_eval.metrics([record["detector"] for record in records])
    together = bundle_eval.metrics([record["with_model"] for record in records])
    uncertain = sum(len(record["uncertain"]) for record in records)
    answered = [record for record in records if "answer" in record]
    figures = {
        "model": args.model,
        "bundles": len(records),
        "uncertain_junctions": uncertain,
        "detector_right": sum(record["detector_right"] for record in records),
        "with_model_right": sum(record["model_right"] for record in records),
        "detector_alone": alone,
        "with_second_reader": together,
        "answered": len(answered),
        "failed": len(records) - len(answered),
        "mean_seconds": round(sum(r["seconds"] for r in records) / len(records), 1) if records else None,
        "mean_input_tokens": round(sum(r["input_tokens"] or 0 for r in answered) / len(answered)) if answered else None,
        "mean_output_tokens": round(sum(r["output_tokens"] or 0 for r in answered) / len(answered))
        if answered
        else None,
        "seconds": round(time.monotonic() - started, 1),
        "cases": [
            {key: value for key, value in record.items() if key not in ("detector", "with_model")}
            | {"detector_boundaries": list(record["detector"].split.boundaries)}
            | {"with_model_boundaries": list(record["with_model"].split.boundaries)}
            for record in records
        ],
    }

    def report() -> None:
        print("# The model as second reader of bundle boundaries (eval/bundle_second_reader.py)\n")
        print(
            f"{len(records)} bundles of eval/bundles.py (seed 27) with every printed page number blanked and "
            f"a junction the detector decided narrowly; model {args.model} at {args.base_url}; "
            f"{figures['seconds']} s.\n"
        )
        print("| | precision | recall | F1 | wrong bundles | parts with two invoices | uncertain junctions right |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for name, row, right in (
            ("detector alone", alone, figures["detector_right"]),
            ("with the second reader", together, figures["with_model_right"]),
        ):
            print(
                f"| {name} | {row['precision']:.3f} | {row['recall']:.3f} | {row['f1']:.3f} | {row['wrong_bundles']} "
                f"| {row['mixed_parts']} | {right} of {uncertain} |"
            )
        print(
            f"\nAnswered {len(answered)} of {len(records)} (failed: {figures['failed']}); per question "
            f"{figures['mean_seconds']} s, {figures['mean_input_tokens']} tokens in, "
            f"{figures['mean_output_tokens']} out.\n"
        )
        print("| bundle | family | truth | detector | with model | model's answer | seconds |")
        print("|---|---|---|---|---|---|---:|")
        for case in figures["cases"]:
            print(
                f"| {case['bundle']} | {case['family']} | {case['truth']} | {case['detector_boundaries']} "
                f"| {case['with_model_boundaries']} | {case.get('answer', case.get('error'))} | {case['seconds']} |"
            )

    harness.publish_results("bundle-second-reader", report, figures, json_path=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
