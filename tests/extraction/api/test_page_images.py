"""A document's pages: how many there are, counted at upload and shown with the document."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from tests.einvoice_files import elektron_xml
from tests.factories import DOCUMENTS_URL, INVOICES, upload_document

pytestmark = pytest.mark.django_db

EINFACH_PDF = INVOICES / "zugferd-corpus/XML-Rechnung/FX/EN16931_Einfach.pdf"
OYO_PNG = INVOICES / "invoice2data/compare/oyo.png"


def _two_frame_tiff() -> bytes:
    buffer = io.BytesIO()
    first, second = Image.new("L", (40, 30), 255), Image.new("L", (20, 50), 0)
    first.save(buffer, format="TIFF", save_all=True, append_images=[second])
    return buffer.getvalue()


# --- the page count ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "name", "page_count"),
    [
        pytest.param(EINFACH_PDF.read_bytes(), "einfach.pdf", 2, id="pdf-pages"),
        pytest.param(OYO_PNG.read_bytes(), "oyo.png", 1, id="png-one-frame"),
        pytest.param(_two_frame_tiff(), "scan.tiff", 2, id="tiff-frames"),
        pytest.param(b"Invoice 1\fTotal 10.00\n", "invoice.txt", 2, id="text-form-feed-pages"),
        pytest.param(elektron_xml(), "invoice.xml", 1, id="xml-the-printed-einvoice"),
        pytest.param(b"%PDF-1.4 this is no PDF", "broken.pdf", None, id="unreadable-pdf"),
    ],
)
def test_upload_and_detail_show_the_page_count(tenant_a, content, name, page_count):
    created = upload_document(tenant_a.client, content, name=name)

    assert created["page_count"] == page_count
    assert tenant_a.client.get(f"{DOCUMENTS_URL}/{created['id']}").json()["page_count"] == page_count
