"""``POST /api/v1/extraction-batches`` and ``GET /api/v1/extraction-batches/{id}``: many files in
one request, each accepted as its own job (docs/batches.md). Thin views: the upload handler
keeps the parts within the batch's bounds, the view parses the options, reads an archive's
directory (extraction/intake/archives.py) and calls ``accept_batch``
(extraction/intake/batches.py)."""

from __future__ import annotations

import hashlib
import io
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any, TypeVar

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import FileUploadHandler, StopFutureHandlers
from django.db.models import Count, Model, QuerySet
from django.urls import reverse
from django.utils.datastructures import MultiValueDict
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.parsers import DataAndFiles, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.permissions import request_principal
from config.openapi import problems
from config.parsers import body_too_large
from config.problems import Problem
from config.serializers import StrictSerializer
from extraction.api.serializers import DOCUMENT_SCHEMA, JobOptionsSerializer, document_body
from extraction.api.views import IDEMPOTENCY_KEY_HEADER, IDEMPOTENCY_KEY_SCHEMA, JobCursorPagination, _idempotency_key
from extraction.intake.acceptance import SCHEMAS
from extraction.intake.archives import ArchiveRefused, archive_files
from extraction.intake.batches import (
    BatchConflict,
    BatchRequest,
    IncomingFile,
    accept_batch,
    content_digest,
    document_too_large,
)
from extraction.models import BatchSource, ExtractionBatch, ExtractionBatchItem, JobState

if TYPE_CHECKING:  # a name of django-stubs only: QueryDict(mutable=False)
    from django.http.request import _ImmutableQueryDict

FILES_FIELD = "files"
ARCHIVE_FIELD = "archive"
# The files of one request share one spool: in memory up to this much, then one temporary
# file (one descriptor however many parts). An archive gets a spool of its own.
SPOOL_MEMORY_BYTES = 32 * 1024 * 1024
# Multipart framing per part (boundary, headers): what a declared Content-Length may add.
PART_FRAMING_BYTES = 1024


class BatchUpload(UploadedFile):
    """A file part of a batch request as the handler kept it: ``kept`` bytes (at most the
    limit of its field) of the ``size`` sent, at ``offset`` of the request's spool."""

    def __init__(self, *, name: str, size: int, kept: int, spool: IO[bytes], offset: int) -> None:
        super().__init__(file=None, name=name, size=size)
        self.sent, self.kept, self.spool, self.offset = size, kept, spool, offset

    @property
    def truncated(self) -> bool:
        return self.sent > self.kept

    def open_bytes(self) -> IO[bytes]:
        """The file's bytes, in memory (a document is at most DOCUMENT_MAX_BYTES)."""
        self.spool.seek(self.offset)
        return io.BytesIO(self.spool.read(self.kept))

    def stream(self) -> IO[bytes]:
        """The spool itself, from the file's start: for the archive, alone in its spool."""
        self.spool.seek(self.offset)
        return self.spool

    def sha256(self) -> str:
        digest = hashlib.sha256()
        self.spool.seek(self.offset)
        left = self.kept
        while left > 0:
            chunk = self.spool.read(min(left, 1024 * 1024))
            if not chunk:
                break
            digest.update(chunk)
            left -= len(chunk)
        return digest.hexdigest()

    def close(self) -> None:
        # Django closes every uploaded file when the response is done: the spool goes with them.
        self.spool.close()

    @property
    def closed(self) -> bool:
        return self.spool.closed


class BatchUploadHandler(FileUploadHandler):
    """Keeps a batch's file parts in one spool and holds the batch's bounds as the bytes
    arrive: more than BATCH_MAX_FILES parts or BATCH_MAX_BYTES in all refuses the request
    (413); a file past DOCUMENT_MAX_BYTES is cut there and refused alone (its item says so)."""

    def __init__(self, request: Any = None) -> None:
        super().__init__(request)
        # Closed with the request's uploaded files (BatchUpload.close).
        self.files_spool: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY_BYTES)
        self.archive_seen = False
        self.parts = 0
        self.received = 0
        self.target: IO[bytes] = self.files_spool
        self.limit = 0
        self.offset = 0

    def new_file(
        self,
        field_name: str,
        file_name: str,
        content_type: str,
        content_length: int | None,
        charset: str | None = None,
        content_type_extra: dict[str, bytes] | None = None,
    ) -> None:
        super().new_file(field_name, file_name, content_type, content_length, charset, content_type_extra)
        self.parts += 1
        if self.parts > settings.BATCH_MAX_FILES:
            raise too_many_files(settings.BATCH_MAX_FILES)
        if field_name == ARCHIVE_FIELD:
            if self.archive_seen:
                raise Problem(
                    "A batch has one archive.",
                    slug="validation-error",
                    title="The request is not valid",
                    extra={"errors": {ARCHIVE_FIELD: ["Send one archive per batch."]}},
                )
            self.archive_seen = True
            self.target = tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY_BYTES)
            self.limit, self.offset = settings.BATCH_MAX_BYTES, 0
        else:
            self.target = self.files_spool
            self.target.seek(0, io.SEEK_END)
            self.limit, self.offset = settings.DOCUMENT_MAX_BYTES, self.target.tell()
        raise StopFutureHandlers()  # no other handler keeps a copy

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes | None:
        self.received += len(raw_data)
        if self.received > settings.BATCH_MAX_BYTES:
            raise body_too_large(settings.BATCH_MAX_BYTES)
        room = self.limit - start
        if room > 0:
            self.target.write(raw_data[:room])
        return None

    def file_complete(self, file_size: int) -> BatchUpload:
        return BatchUpload(
            name=self.file_name or "",
            size=file_size,
            kept=min(file_size, self.limit),
            spool=self.target,
            offset=self.offset,
        )


class BatchMultiPartParser(MultiPartParser):
    def parse(
        self, stream: IO[Any], media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> DataAndFiles[_ImmutableQueryDict, MultiValueDict]:
        assert parser_context is not None  # DRF's Request always passes its parser context
        request = parser_context["request"]
        limit = settings.BATCH_MAX_BYTES
        framing = settings.BATCH_MAX_FILES * PART_FRAMING_BYTES + 64 * 1024
        if int(request.META.get("CONTENT_LENGTH") or 0) > limit + framing:
            raise body_too_large(limit)
        request.upload_handlers.insert(0, BatchUploadHandler(request))
        return super().parse(stream, media_type, parser_context)


def too_many_files(limit: int) -> Problem:
    return Problem(
        f"A batch may have at most {limit} files.", slug="batch-too-many-files", title="Too many files", status_code=413
    )


@extend_schema_field(JobOptionsSerializer)
class JobOptionsPart(serializers.JSONField):
    """The job options as one JSON part (``options={"priority": "interactive"}``), checked as a
    job's options are."""

    def to_internal_value(self, data: Any) -> Any:
        try:
            parsed = super().to_internal_value(data)
        except RecursionError:
            # json's decoder recurses per nesting level: "[[[[…" within the part's size limit.
            self.fail("invalid")
        options = JobOptionsSerializer(data=parsed)
        options.is_valid(raise_exception=True)
        return options.validated_data


class BatchCreateSerializer(StrictSerializer):
    """A batch: the documents as `files` parts or one zip `archive`, the schema and the options
    of every job. Rejects parts it does not know."""

    files = serializers.ListField(
        child=serializers.FileField(allow_empty_file=True, use_url=False),
        required=False,
        help_text="The documents, one part each (PDF, PNG, JPEG, TIFF, XML or UTF-8 text). Or one `archive`.",
    )
    archive = serializers.FileField(
        required=False, allow_empty_file=True, use_url=False, help_text="A zip archive of the documents. Or `files`."
    )
    schema = serializers.ChoiceField(choices=list(SCHEMAS), default="invoice.v1")
    options = JobOptionsPart(required=False, help_text="The options of every job of the batch, as one JSON part.")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if bool(attrs.get("files")) == ("archive" in attrs):
            message = "Send the documents as `files` parts or as one `archive`, not both."
            raise serializers.ValidationError({FILES_FIELD: [message], ARCHIVE_FIELD: [message]})
        if "options" not in attrs:
            options = JobOptionsSerializer(data={})
            options.is_valid(raise_exception=True)
            attrs["options"] = options.validated_data
        return attrs


# --- what the API answers ------------------------------------------------------------------------

_JOB_STATES = {"type": "string", "enum": JobState.values}
BATCH_ITEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["position", "filename", "document", "job", "problem"],
    "properties": {
        "position": {"type": "integer", "minimum": 0, "description": "The file's place in the request, from 0."},
        "filename": {"type": "string", "description": "The name as sent; never used as a path."},
        "document": {"oneOf": [DOCUMENT_SCHEMA, {"type": "null"}], "description": "Null if refused before storing."},
        "job": {
            "oneOf": [
                {
                    "type": "object",
                    "required": ["job_id", "state", "status_url"],
                    "properties": {
                        "job_id": {"type": "string", "format": "uuid"},
                        "state": _JOB_STATES,
                        "status_url": {"type": "string"},
                    },
                },
                {"type": "null"},
            ],
            "description": "The file's job; null when the file was refused.",
        },
        "problem": {
            "oneOf": [{"$ref": "#/components/schemas/Problem"}, {"type": "null"}],
            "description": "Why the file was refused (RFC 9457); null when it has a job.",
        },
    },
}
_SUMMARY_PROPERTIES: dict[str, Any] = {
    "batch_id": {"type": "string", "format": "uuid"},
    "status_url": {"type": "string"},
    "schema": {"type": "string", "enum": list(SCHEMAS)},
    "options": {"type": "object", "description": "The options of every job, defaults applied."},
    "file_count": {"type": "integer", "minimum": 1},
    "accepted": {"type": "integer", "minimum": 0, "description": "Files that have a job."},
    "refused": {"type": "integer", "minimum": 0, "description": "Files refused, each with its problem."},
    "states": {
        "type": "object",
        "description": "The batch's jobs by state, now.",
        "required": JobState.values,
        "properties": {state: {"type": "integer", "minimum": 0} for state in JobState.values},
    },
    "created_at": {"type": "string", "format": "date-time"},
    "accepted_at": {
        "type": ["string", "null"],
        "format": "date-time",
        "description": "When every file had its answer; null while the acceptance runs or if it was "
        "interrupted (a replay with the same key finishes it).",
    },
    "completed_at": {
        "type": ["string", "null"],
        "format": "date-time",
        "description": "When every job of the batch (and every part of a split one) was found finished and "
        "extraction.batch_completed.v1 was sent; null until then.",
    },
}
BATCH_ACCEPTED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": [*_SUMMARY_PROPERTIES, "items"],
    "properties": {
        **_SUMMARY_PROPERTIES,
        "items": {"type": "array", "items": BATCH_ITEM_SCHEMA, "description": "Every file, in order."},
    },
}
BATCH_DETAIL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": [*_SUMMARY_PROPERTIES, "items", "next", "previous"],
    "properties": {
        **_SUMMARY_PROPERTIES,
        "items": {"type": "array", "items": BATCH_ITEM_SCHEMA, "description": "A page of the files, in order."},
        "next": {"type": ["string", "null"], "description": "The next page's URL."},
        "previous": {"type": ["string", "null"], "description": "The previous page's URL."},
    },
}


def _batch_url(batch: ExtractionBatch) -> str:
    return reverse("extraction-batch-detail", args=[batch.pk])


def batch_summary(batch: ExtractionBatch) -> dict[str, Any]:
    """What the batch is and how far its jobs are: one aggregate over its items."""
    counts = ExtractionBatchItem.objects.filter(batch=batch).values_list("job__state").annotate(files=Count("id"))
    by_state = {state: files for state, files in counts}
    refused = by_state.pop(None, 0)
    return {
        "batch_id": str(batch.pk),
        "status_url": _batch_url(batch),
        "schema": batch.schema,
        "options": batch.options,
        "file_count": batch.file_count,
        "accepted": sum(by_state.values()),
        "refused": refused,
        "states": {state: by_state.get(state, 0) for state in JobState.values},
        "created_at": batch.created_at.isoformat(),
        "accepted_at": batch.accepted_at.isoformat() if batch.accepted_at else None,
        "completed_at": batch.completed_at.isoformat() if batch.completed_at else None,
    }


def item_body(item: ExtractionBatchItem) -> dict[str, Any]:
    job = item.job
    return {
        "position": item.position,
        "filename": item.filename,
        "document": document_body(item.document) if item.document is not None else None,
        "job": (
            {"job_id": str(job.pk), "state": job.state, "status_url": reverse("extraction-job-detail", args=[job.pk])}
            if job is not None
            else None
        ),
        "problem": item.problem,
    }


# What document_body reads.
_DOCUMENT_FIELDS = ("id", "version", "sha256", "size", "content_type", "page_count", "created_at")


def _items(batch: ExtractionBatch) -> QuerySet[ExtractionBatchItem]:
    return (
        ExtractionBatchItem.objects.filter(batch=batch)
        .select_related("job", "document")
        .only("position", "filename", "problem", "job__id", "job__state", *(f"document__{f}" for f in _DOCUMENT_FIELDS))
    )


# --- the views ----------------------------------------------------------------------------------------


class BatchCreateView(APIView):
    parser_classes = [BatchMultiPartParser]

    @extend_schema(
        operation_id="v1_extraction_batches_create",
        request={"multipart/form-data": BatchCreateSerializer},
        parameters=[
            OpenApiParameter(IDEMPOTENCY_KEY_HEADER, IDEMPOTENCY_KEY_SCHEMA, OpenApiParameter.HEADER, required=True),
            OpenApiParameter("Location", str, OpenApiParameter.HEADER, response=[202], description="The batch's URL."),
            OpenApiParameter(
                "Idempotent-Replayed",
                {"type": "string", "enum": ["true"]},
                OpenApiParameter.HEADER,
                response=[202],
                description="Present when the key was used before for this batch: its jobs, not new ones.",
            ),
        ],
        responses={
            202: OpenApiResponse(
                BATCH_ACCEPTED_SCHEMA, description="Every file's job, or the problem that refused it."
            ),
            **problems(
                {
                    400: {
                        "idempotency-key-missing": "The Idempotency-Key header is missing.",
                        "idempotency-key-invalid": "The Idempotency-Key is not 1 to 255 printable ASCII characters.",
                    },
                    409: {
                        "idempotency-key-conflict": "The key was used for another batch; `batch_id` names it.",
                    },
                    413: {
                        "batch-too-many-files": "More files (parts, or files in the archive) than a batch may have.",
                        "archive-too-large": "The archive's files declare more bytes uncompressed than allowed.",
                    },
                    422: {
                        "archive-unreadable": "The archive is not a zip archive that can be read.",
                        "archive-empty": "The archive holds no files.",
                    },
                }
            ),
        },
    )
    def post(self, request: Request) -> Response:
        principal = request_principal(request)
        key = _idempotency_key(request)
        serializer = BatchCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        options = dict(data["options"])
        job_options = {
            "schema": data["schema"],
            "model_policy": options.pop("model_policy"),
            "priority_class": options.pop("priority"),
            "deadline_seconds": options.pop("deadline_seconds", settings.JOB_DEFAULT_DEADLINE_SECONDS),
            "options": options,
        }
        try:
            if ARCHIVE_FIELD in data:
                archive: BatchUpload = data[ARCHIVE_FIELD]
                digest = content_digest([archive.sha256()])
                with archive_files(archive.stream()) as files:
                    batch_request = BatchRequest(
                        source=BatchSource.ARCHIVE, content_digest=digest, file_count=len(files), **job_options
                    )
                    accepted = accept_batch(
                        tenant=principal.tenant, idempotency_key=key, request=batch_request, files=files
                    )
            else:
                uploads: list[BatchUpload] = data[FILES_FIELD]
                digest = content_digest([f"{upload.sha256()}:{upload.sent}" for upload in uploads])
                batch_request = BatchRequest(
                    source=BatchSource.FILES, content_digest=digest, file_count=len(uploads), **job_options
                )
                accepted = accept_batch(
                    tenant=principal.tenant,
                    idempotency_key=key,
                    request=batch_request,
                    files=[_incoming(upload) for upload in uploads],
                )
        except ArchiveRefused as exc:
            raise Problem(exc.detail, slug=exc.slug, title=exc.title, status_code=exc.status) from exc
        except BatchConflict as exc:
            raise Problem(
                str(exc),
                slug="idempotency-key-conflict",
                title="Idempotency-Key reused",
                status_code=409,
                extra={"batch_id": str(exc.batch_id)},
            ) from exc

        batch = accepted.batch
        body = {**batch_summary(batch), "items": [item_body(item) for item in _items(batch).order_by("position")]}
        headers = {"Location": _batch_url(batch)}
        if accepted.replayed:
            headers["Idempotent-Replayed"] = "true"
        return Response(body, status=status.HTTP_202_ACCEPTED, headers=headers)


def _incoming(upload: BatchUpload) -> IncomingFile:
    refusal = document_too_large(upload.sent, settings.DOCUMENT_MAX_BYTES) if upload.truncated else None
    return IncomingFile(filename=upload.name or "", read=upload.open_bytes, refusal=refusal)


_M = TypeVar("_M", bound=Model)
_R = TypeVar("_R")


class BatchItemPagination(JobCursorPagination):
    # The position is unique within a batch: the cursor needs no tie-breaker (the id never decides).
    ordering = ("position", "id")

    def paginate_queryset(
        self, queryset: QuerySet[_M, _R] | Sequence[_R], request: Request, view: APIView | None = None
    ) -> list[_R] | None:
        try:
            return super().paginate_queryset(queryset, request, view)
        except (DjangoValidationError, ValueError, TypeError) as exc:
            # A forged cursor position that is not a number fails in the ORM: a 404 like any
            # other invalid cursor, not a 500.
            raise NotFound(self.invalid_cursor_message) from exc


class BatchDetailView(APIView):
    @extend_schema(
        operation_id="v1_extraction_batches_retrieve",
        parameters=[
            OpenApiParameter("cursor", str, description="Opaque: the next or previous link of a page holds it."),
            OpenApiParameter(
                "page_size",
                {"type": "integer", "minimum": 1, "maximum": BatchItemPagination.max_page_size},
                description=f"Files per page (default {BatchItemPagination.page_size}).",
            ),
        ],
        responses={
            200: OpenApiResponse(BATCH_DETAIL_SCHEMA),
            **problems(
                {
                    400: {"validation-error": "`page_size` is out of range."},
                    404: {"not-found": "The cursor is not one this list handed out."},
                }
            ),
        },
    )
    def get(self, request: Request, batch_id: uuid.UUID) -> Response:
        principal = request_principal(request)
        batch = ExtractionBatch.objects.filter(tenant=principal.tenant, pk=batch_id).first()
        if batch is None:
            # Another tenant's batch answers exactly like a missing one.
            raise Problem("No such extraction batch.", slug="not-found", title="Not found", status_code=404)
        paginator = BatchItemPagination()
        page = paginator.paginate_queryset(_items(batch), request, view=self)
        assert page is not None  # None only without a page size, and get_page_size always gives one
        body = {
            **batch_summary(batch),
            "items": [item_body(item) for item in page],
            "next": paginator.get_next_link(),
            "previous": paginator.get_previous_link(),
        }
        return Response(body)
