"""Input validation and output shapes of the extraction API. No business rules live here."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models import Count, Max, Q, Sum
from rest_framework import serializers

from config.serializers import JsonBooleanField, StrictSerializer
from extraction.capacity.waiting import explain_wait
from extraction.intake.acceptance import SCHEMAS
from extraction.models import Attempt, Document, ExtractionJob, ExtractionResult, JobState, PriorityClass


class DocumentIdField(serializers.UUIDField):
    """A UUID written as a JSON string. DRF alone would also take ``123`` or ``true`` as
    ``UUID(int=…)`` and answer "unknown document" to what is a type error."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str):
            self.fail("invalid", value=data)
        return super().to_internal_value(data)


class JobOptionsSerializer(StrictSerializer):
    model_policy = serializers.CharField(default="default")
    priority = serializers.ChoiceField(choices=PriorityClass.choices, default=PriorityClass.BATCH)
    deadline_seconds = serializers.IntegerField(required=False)
    # Absent means true; stored only when sent, so the jobs accepted before it have the same
    # request hash (an idempotent replay across the upgrade is still a replay).
    split_bundles = JsonBooleanField(
        required=False,
        help_text="A PDF that holds several invoices becomes one job per invoice (true, the default), "
        "or is read as one invoice (false).",
    )

    def validate_model_policy(self, value: str) -> str:
        if value not in settings.MODEL_POLICIES:
            raise serializers.ValidationError(f"Must be one of {', '.join(sorted(settings.MODEL_POLICIES))}.")
        return value

    def validate_deadline_seconds(self, value: int) -> int:
        low, high = settings.JOB_MIN_DEADLINE_SECONDS, settings.JOB_DEFAULT_DEADLINE_SECONDS
        if not low <= value <= high:
            raise serializers.ValidationError(f"Must be between {low} and {high} seconds.")
        return value


class JobCreateSerializer(StrictSerializer):
    document_id = DocumentIdField()
    schema = serializers.ChoiceField(choices=list(SCHEMAS), default="invoice.v1")
    options = JobOptionsSerializer(required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "options" not in attrs:
            options = JobOptionsSerializer(data={})
            options.is_valid(raise_exception=True)
            attrs["options"] = options.validated_data
        return attrs


class DocumentUploadSerializer(StrictSerializer):
    file = serializers.FileField(allow_empty_file=False)


# What document_body answers, as the published schema shows it.
DOCUMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["id", "version", "sha256", "size", "content_type", "page_count", "created_at"],
    "properties": {
        "id": {"type": "string", "format": "uuid"},
        "version": {"type": "string", "format": "uuid", "description": "Immutable: other bytes are another document."},
        "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
        "size": {"type": "integer", "minimum": 1, "description": "In bytes."},
        "content_type": {"type": "string", "description": "Sniffed from the bytes, not taken from the client."},
        "page_count": {
            "type": ["integer", "null"],
            "minimum": 0,
            "description": "A PDF's pages, an image's frames, a text's form-feed pages, 1 for XML; null where "
            "they could not be counted. The pages of a PDF or an image are shown by /pages/{page}.png.",
        },
        "created_at": {"type": "string", "format": "date-time"},
    },
}


def document_body(document: Document) -> dict[str, Any]:
    return {
        "id": str(document.pk),
        "version": str(document.version),
        "sha256": document.sha256,
        "size": document.size,
        "content_type": document.content_type,
        # The pages an image can be shown of, numbered from 1; null where none were counted.
        "page_count": document.page_count,
        "created_at": document.created_at.isoformat(),
    }


def result_body(job: ExtractionJob, *, with_usage: bool = False) -> dict[str, Any] | None:
    try:
        result = job.result
    except ExtractionResult.DoesNotExist:
        return None
    body: dict[str, Any] = {
        "output": result.output,
        "validation": result.validation,
        "policy_version": result.policy_version,
        "model": result.model,
        "created_at": result.created_at.isoformat(),
    }
    if with_usage:
        body["usage"] = result_usage(job, result)
    return body


def result_usage(job: ExtractionJob, result: ExtractionResult) -> dict[str, Any]:
    """What the result cost: the winning attempt's latency and tokens, and every attempt's tokens
    (one aggregate over the job's ledger rows; the fence is unique per job)."""
    winning = Q(fence=result.fence)
    # An alias may not repeat a column another aggregate reads, hence the "winning_" names.
    usage = Attempt.objects.filter(job=job).aggregate(
        winning_latency_ms=Max("latency_ms", filter=winning),
        winning_input_tokens=Max("input_tokens", filter=winning),
        winning_output_tokens=Max("output_tokens", filter=winning),
        attempts=Count("id"),
        all_attempts_input_tokens=Sum("input_tokens"),
        all_attempts_output_tokens=Sum("output_tokens"),
    )
    return {
        "provider": result.provider,
        "latency_ms": usage["winning_latency_ms"],
        "input_tokens": usage["winning_input_tokens"],
        "output_tokens": usage["winning_output_tokens"],
        "attempts": usage["attempts"],
        "all_attempts_input_tokens": usage["all_attempts_input_tokens"],
        "all_attempts_output_tokens": usage["all_attempts_output_tokens"],
    }


def split_parts(job: ExtractionJob) -> list[dict[str, Any]]:
    """A split job's parts in page order: each one's job, pages and state."""
    parts = job.parts.order_by("first_page").values_list("id", "first_page", "last_page", "state")
    return [{"job_id": str(part_id), "pages": [first, last], "state": state} for part_id, first, last, state in parts]


def job_body(
    job: ExtractionJob, *, status_url: str, operator: bool, with_wait_reason: bool = False, with_usage: bool = False
) -> dict[str, Any]:
    """The authoritative status (API-1). Retry internals only for operators."""
    body: dict[str, Any] = {
        "job_id": str(job.pk),
        "state": job.state,
        "state_version": job.state_version,
        "status_url": status_url,
        "schema": job.schema,
        "model_policy": job.model_policy,
        "priority": job.priority_class,
        "options": job.options,
        "document": {"id": str(job.document_id), "version": str(job.document_version)},
        "created_at": job.created_at.isoformat(),
        "updated_at": job.updated_at.isoformat(),
        "deadline_at": job.deadline_at.isoformat(),
        "result": result_body(job, with_usage=with_usage),
        "error": {"class": job.error_class, "detail": job.error_detail} if job.error_class else None,
        # A bundle (issue #27): a SPLIT job lists its parts' jobs; a part names its parent.
        "parts": split_parts(job) if job.state == JobState.SPLIT else None,
        "parent": ({"job_id": str(job.parent_id), "pages": [job.first_page, job.last_page]} if job.parent_id else None),
    }
    if operator:
        body["execution"] = {
            "attempt": job.attempt,
            "max_attempts": job.max_attempts,
            "fence": job.fence,
            "lease_owner": job.lease_owner or None,
            "lease_until": job.lease_until.isoformat() if job.lease_until else None,
            "available_at": job.available_at.isoformat(),
            "estimated_tokens": job.estimated_tokens,
            "byte_size": job.byte_size,
        }
        if with_wait_reason:
            # "Why is my job waiting?": ingress, backoff, pool capacity, tenant cap, no worker.
            # Only on the single-job read: it costs a few queries and a Redis call.
            body["execution"]["waiting"] = explain_wait(job)
    return body
