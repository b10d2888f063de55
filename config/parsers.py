"""Request body parsers that refuse oversized bodies with 413 before reading them whole."""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, TYPE_CHECKING, Any

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler
from django.utils.datastructures import MultiValueDict
from rest_framework.exceptions import ParseError
from rest_framework.parsers import DataAndFiles, JSONParser, MultiPartParser

from config.problems import Problem

if TYPE_CHECKING:  # a name of django-stubs only: QueryDict(mutable=False)
    from django.http.request import _ImmutableQueryDict


def body_too_large(limit: int) -> Problem:
    return Problem(
        f"The request body is larger than {limit} bytes.",
        slug="payload-too-large",
        title="Payload too large",
        status_code=413,
        extra={"limit_bytes": limit},
    )


class BoundedJSONParser(JSONParser):
    def parse(
        self, stream: IO[Any], media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        limit = settings.API_MAX_JSON_BODY_BYTES
        assert parser_context is not None  # DRF's Request always passes its parser context
        request = parser_context["request"]
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
        if declared > limit:
            raise body_too_large(limit)
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError as exc:
            # json's decoder recurses per nesting level: "[[[[…" within the size limit is
            # otherwise a 500.
            raise ParseError("JSON parse error - nested too deeply.") from exc


class DocumentSizeLimitHandler(FileUploadHandler):
    """Counts uploaded bytes as they arrive and stops at the document size limit, so an
    oversized upload without a Content-Length is refused without being stored."""

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        if start + len(raw_data) > settings.DOCUMENT_MAX_BYTES:
            raise body_too_large(settings.DOCUMENT_MAX_BYTES)
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None


class BoundedMultiPartParser(MultiPartParser):
    def parse(
        self, stream: IO[Any], media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> DataAndFiles[_ImmutableQueryDict, MultiValueDict]:
        assert parser_context is not None  # DRF's Request always passes its parser context
        request = parser_context["request"]
        limit = settings.DOCUMENT_MAX_BYTES
        # Multipart framing adds a little; anything declared beyond that cannot fit.
        if int(request.META.get("CONTENT_LENGTH") or 0) > limit + 64 * 1024:
            raise body_too_large(limit)
        request.upload_handlers.insert(0, DocumentSizeLimitHandler(request))
        return super().parse(stream, media_type, parser_context)
