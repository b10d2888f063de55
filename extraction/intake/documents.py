"""Storing uploaded documents: type sniffed from the bytes, identity from the digest (ACC-4)."""

from __future__ import annotations

import hashlib
import re
import uuid
from pathlib import Path
from typing import IO

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import connection, transaction

from accounts.models import Tenant
from config.sql import load_statements
from extraction.intake.pages import count_pages
from extraction.models import Document

SQL = load_statements(Path(__file__).with_suffix(".sql"))

# Magic numbers of the formats we accept. The client's Content-Type and file name are ignored.
_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"%PDF-", "application/pdf"),
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"II*\x00", "image/tiff"),
    (b"MM\x00*", "image/tiff"),
)


# How many leading bytes decide the type.
SNIFF_BYTES = 8192

# An XML declaration, or a first element that is an e-invoice's root (UBL Invoice/CreditNote,
# CII, ZUGFeRD 1.0). Other text that merely starts with "<" stays plain text.
_XML_START = re.compile(
    rb"\A(?:\xef\xbb\xbf)?\s*(?:<\?xml[\s?]|<(?:[\w.-]+:)?(?:Invoice|CreditNote|CrossIndustryInvoice|CrossIndustryDocument)[\s>/])"
)


class UnsupportedDocument(Exception):
    pass


class TooManyPages(Exception):
    """More pages than DOCUMENT_MAX_PAGES: refused before it is stored (422)."""

    def __init__(self, pages: int, limit: int) -> None:
        super().__init__(f"The document has {pages} pages; a document may have at most {limit}.")
        self.pages, self.limit = pages, limit


def sniff_content_type(head: bytes) -> str:
    """The media type the first bytes prove, or :class:`UnsupportedDocument`."""
    for magic, media_type in _SIGNATURES:
        if head.startswith(magic):
            return media_type
    if head and _looks_like_text(head):
        return "application/xml" if _XML_START.match(head) else "text/plain"
    raise UnsupportedDocument("Not a PDF, PNG, JPEG, TIFF, XML or UTF-8 text document.")


def _looks_like_text(head: bytes) -> bool:
    if b"\x00" in head:
        return False
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A full sample may end inside a multi-byte character; a shorter one is the whole
        # document, so an undecodable tail there is not UTF-8 (latin-1 "café", say).
        if len(head) < SNIFF_BYTES or exc.start < len(head) - 3:
            return False
        text = head[: exc.start].decode("utf-8")
    controls = sum(1 for ch in text if ord(ch) < 32 and ch not in "\t\n\r\f")
    return controls == 0


def store_document(*, tenant: Tenant, upload: IO[bytes], filename: str = "") -> tuple[Document, bool]:
    """Store the bytes and return ``(document, created)``.

    1. Hash the bytes while sniffing their type (the upload is already bounded by the view).
    2. Count its pages (a PDF's page tree, an image's frames): what page images it has; more
       than DOCUMENT_MAX_PAGES is :class:`TooManyPages`, and nothing is stored.
    3. Write them under a content-addressed name; an existing object is not rewritten.
    4. ``INSERT … ON CONFLICT (tenant, sha256) DO NOTHING``: a concurrent or repeated upload of
       the same bytes gets the row that won.
    """
    upload.seek(0)
    head = upload.read(SNIFF_BYTES)
    content_type = sniff_content_type(head)
    digest = hashlib.sha256(head)
    size = len(head)
    for chunk in iter(lambda: upload.read(1024 * 1024), b""):
        digest.update(chunk)
        size += len(chunk)
    sha256 = digest.hexdigest()

    existing = Document.objects.filter(tenant=tenant, sha256=sha256).first()
    if existing is not None:
        return existing, False

    page_count = count_pages(upload, content_type)
    if page_count is not None and page_count > settings.DOCUMENT_MAX_PAGES:
        raise TooManyPages(page_count, settings.DOCUMENT_MAX_PAGES)
    name = f"documents/{tenant.pk}/{sha256}"
    if not default_storage.exists(name):
        upload.seek(0)
        name = default_storage.save(name, upload)

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            SQL["insert_document"],
            {
                "id": uuid.uuid4(),
                "tenant": tenant.pk,
                "sha256": sha256,
                "version": uuid.uuid4(),
                "size": size,
                "content_type": content_type,
                "storage_name": name,
                "filename": filename[:255],
                "page_count": page_count,
            },
        )
        created = cursor.fetchone() is not None
    return Document.objects.get(tenant=tenant, sha256=sha256), created
