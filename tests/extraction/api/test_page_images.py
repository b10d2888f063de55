"""A document's pages as images (GET /api/v1/documents/{id}/pages/{n}.png): what evidence boxes
are drawn on, scoped to the tenant like every read, rendered once and served from storage."""

from __future__ import annotations

import io
import json

import pytesseract
import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from PIL import Image

from extraction.intake.geometry import boxes_for
from extraction.intake.text import extract_document_text
from extraction.models import Document
from tests.einvoice_files import elektron_xml
from tests.extraction.intake.handmade_pdf import handmade_pdf
from tests.factories import DOCUMENTS_URL, INVOICES, upload_document

pytestmark = pytest.mark.django_db

EINFACH_PDF = INVOICES / "zugferd-corpus/XML-Rechnung/FX/EN16931_Einfach.pdf"
OYO_PNG = INVOICES / "invoice2data/compare/oyo.png"
PROBLEM = "application/problem+json"


def _page_url(document_id: str, page: int) -> str:
    return f"{DOCUMENTS_URL}/{document_id}/pages/{page}.png"


def _png(response) -> Image.Image:
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"] == "image/png"
    image = Image.open(io.BytesIO(response.content))
    image.load()
    assert image.format == "PNG"
    return image


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


# --- a PDF page ------------------------------------------------------------------------------------


def test_a_pdf_page_is_rendered_at_the_asked_resolution(tenant_a):
    document = upload_document(tenant_a.client, handmade_pdf(), name="letter.pdf")

    # US Letter is 8.5 x 11 inches.
    assert _png(tenant_a.client.get(_page_url(document["id"], 1), {"dpi": "72"})).size == (612, 792)
    assert _png(tenant_a.client.get(_page_url(document["id"], 1), {"dpi": "36"})).size == (306, 396)
    assert _png(tenant_a.client.get(_page_url(document["id"], 1))).size == (850, 1100)  # 100 dpi


def test_an_evidence_box_frames_the_printed_word_on_the_page_image(tenant_a):
    document = upload_document(tenant_a.client, EINFACH_PDF.read_bytes(), name="einfach.pdf")
    text = extract_document_text(EINFACH_PDF.read_bytes(), "application/pdf")
    start = text.pages[0].index("471102")
    [[x0, y0, x1, y1]] = boxes_for(text.page_geometry(1), start, start + len("471102"))

    image = _png(tenant_a.client.get(_page_url(document["id"], 1), {"dpi": "200"}))

    width, height = image.size
    pad = 3  # pixels round the em box, so no glyph edge is cut
    word = image.crop((x0 * width - pad, y0 * height - pad, x1 * width + pad, y1 * height + pad))
    assert pytesseract.image_to_string(word, config="--psm 7").strip() == "471102"


def test_the_rendered_page_is_kept_and_served_from_storage(tenant_a):
    document = upload_document(tenant_a.client, handmade_pdf(), name="letter.pdf")
    first = tenant_a.client.get(_page_url(document["id"], 1), {"dpi": "50"})
    name = f"page-images/{document['id']}/{document['version']}/1-50dpi.png"
    assert default_storage.open(name).read() == first.content

    # Stored bytes are what the next read answers: nothing renders the page again.
    marker = io.BytesIO()
    Image.new("L", (3, 2), 0).save(marker, format="PNG")
    default_storage.delete(name)
    default_storage.save(name, ContentFile(marker.getvalue()))

    assert _png(tenant_a.client.get(_page_url(document["id"], 1), {"dpi": "50"})).size == (3, 2)


def test_a_page_image_carries_its_etag_and_a_private_cache_lifetime(tenant_a):
    document = upload_document(tenant_a.client, handmade_pdf(), name="letter.pdf")

    response = tenant_a.client.get(_page_url(document["id"], 1), {"dpi": "72"})

    assert response["ETag"] == f'"{document["version"]}-1-72"'
    assert response["Cache-Control"] == "private, max-age=86400"


@pytest.mark.parametrize("held", ['"{etag}"', 'W/"{etag}"', '"other", "{etag}"', "*"])
def test_the_image_the_client_holds_is_304_without_a_body(tenant_a, held):
    document = upload_document(tenant_a.client, handmade_pdf(), name="letter.pdf")
    etag = f"{document['version']}-1-72"

    response = tenant_a.client.get(
        _page_url(document["id"], 1), {"dpi": "72"}, HTTP_IF_NONE_MATCH=held.format(etag=etag)
    )

    assert response.status_code == 304
    assert response.content == b""
    assert (response["ETag"], response["Cache-Control"]) == (f'"{etag}"', "private, max-age=86400")


def test_another_resolution_is_another_image(tenant_a):
    document = upload_document(tenant_a.client, handmade_pdf(), name="letter.pdf")

    response = tenant_a.client.get(
        _page_url(document["id"], 1), {"dpi": "36"}, HTTP_IF_NONE_MATCH=f'"{document["version"]}-1-72"'
    )

    assert _png(response).size == (306, 396)


# --- image uploads -------------------------------------------------------------------------------


def test_an_image_upload_is_served_at_its_own_size_whatever_the_resolution(tenant_a):
    document = upload_document(tenant_a.client, OYO_PNG.read_bytes(), name="oyo.png")
    with Image.open(OYO_PNG) as original:
        size = original.size

    image = _png(tenant_a.client.get(_page_url(document["id"], 1), {"dpi": "36"}))

    assert image.size == size
    assert tenant_a.client.get(_page_url(document["id"], 1)).headers["ETag"] == f'"{document["version"]}-1"'


def test_each_frame_of_a_tiff_is_a_page(tenant_a):
    document = upload_document(tenant_a.client, _two_frame_tiff(), name="scan.tiff")

    second = _png(tenant_a.client.get(_page_url(document["id"], 2)))

    assert (second.size, second.getpixel((0, 0))) == ((20, 50), 0)


# --- what has no page image, or no such page --------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "name"),
    [
        pytest.param(b"Invoice 1\nTotal 10.00\n", "invoice.txt", id="text"),
        pytest.param(elektron_xml(), "e.xml", id="xml"),
    ],
)
def test_xml_and_plain_text_have_no_page_image(tenant_a, content, name):
    document = upload_document(tenant_a.client, content, name=name)

    response = tenant_a.client.get(_page_url(document["id"], 1))

    assert (response.status_code, response["Content-Type"]) == (404, PROBLEM)
    assert response.json()["type"] == "/problems/no-page-image"
    assert response.json()["detail"] == "An XML or plain-text document has no page image."


@pytest.mark.parametrize("page", [0, 3, 99])
def test_a_page_the_document_does_not_have_is_404_naming_the_page_count(tenant_a, page):
    document = upload_document(tenant_a.client, EINFACH_PDF.read_bytes(), name="einfach.pdf")

    response = tenant_a.client.get(_page_url(document["id"], page))

    assert (response.status_code, response["Content-Type"]) == (404, PROBLEM)
    assert response.json()["type"] == "/problems/page-out-of-range"
    assert response.json()["detail"] == f"Page {page} is out of range: the document has 2 page(s)."


def test_a_pdf_that_cannot_be_rendered_has_no_page_image(tenant_a):
    document = upload_document(tenant_a.client, b"%PDF-1.4 this is no PDF", name="broken.pdf")

    response = tenant_a.client.get(_page_url(document["id"], 1))

    assert (response.status_code, response.json()["type"]) == (404, "/problems/no-page-image")
    assert response.json()["detail"] == "The document's pages cannot be read."


def test_a_document_uploaded_before_pages_were_counted_is_counted_on_its_first_page_image(tenant_a):
    document = upload_document(tenant_a.client, EINFACH_PDF.read_bytes(), name="einfach.pdf")
    Document.objects.filter(pk=document["id"]).update(page_count=None)

    assert _png(tenant_a.client.get(_page_url(document["id"], 2), {"dpi": "36"})).size == (298, 421)  # A4
    assert Document.objects.get(pk=document["id"]).page_count == 2


# --- the tenant's documents only, and what the request may ask ---------------------------------------


def test_another_tenants_document_answers_like_a_missing_one(tenant_a, tenant_b):
    document = upload_document(tenant_a.client, handmade_pdf(), name="letter.pdf")

    foreign = tenant_b.client.get(_page_url(document["id"], 1))
    missing = tenant_b.client.get(_page_url("00000000-0000-4000-8000-000000000000", 1))

    assert (foreign.status_code, foreign["Content-Type"]) == (404, PROBLEM)
    assert {k: v for k, v in foreign.json().items() if k != "instance"} == {
        k: v for k, v in missing.json().items() if k != "instance"
    }
    assert foreign.json()["type"] == "/problems/not-found"
    assert not default_storage.exists(f"page-images/{document['id']}")


@pytest.mark.parametrize("dpi", ["35", "201", "0", "-72", "100.5", "lots", "", "٧٢"])
def test_a_resolution_out_of_bounds_is_a_validation_error(tenant_a, dpi):
    document = upload_document(tenant_a.client, handmade_pdf(), name="letter.pdf")

    response = tenant_a.client.get(_page_url(document["id"], 1), {"dpi": dpi})

    assert (response.status_code, response["Content-Type"]) == (400, PROBLEM)
    assert response.json()["type"] == "/problems/validation-error"
    assert response.json()["errors"] == {"dpi": ["Must be an integer from 36 to 200."]}


def test_a_client_that_accepts_only_json_is_406_in_json(tenant_a):
    document = upload_document(tenant_a.client, handmade_pdf(), name="letter.pdf")

    response = tenant_a.client.get(_page_url(document["id"], 1), HTTP_ACCEPT="application/json")

    assert (response.status_code, response["Content-Type"]) == (406, PROBLEM)
    assert response.json()["type"] == "/problems/not-acceptable"


def test_a_problem_is_json_even_when_the_client_asked_for_a_png(tenant_a):
    document = upload_document(tenant_a.client, handmade_pdf(), name="letter.pdf")

    response = tenant_a.client.get(_page_url(document["id"], 7), HTTP_ACCEPT="image/png")

    assert (response.status_code, response["Content-Type"]) == (404, PROBLEM)
    assert json.loads(response.content)["type"] == "/problems/page-out-of-range"


def test_options_describes_the_view_in_json(tenant_a):
    document = upload_document(tenant_a.client, handmade_pdf(), name="letter.pdf")

    response = tenant_a.client.options(_page_url(document["id"], 1))

    assert (response.status_code, response["Content-Type"]) == (200, "application/json")
    assert json.loads(response.content)["renders"] == ["image/png"]


def test_a_browser_image_request_gets_the_png(tenant_a):
    document = upload_document(tenant_a.client, handmade_pdf(), name="letter.pdf")

    response = tenant_a.client.get(
        _page_url(document["id"], 1), HTTP_ACCEPT="image/avif,image/webp,image/png,image/*;q=0.8,*/*;q=0.5"
    )

    assert _png(response).size == (850, 1100)


# --- the published schema ------------------------------------------------------------------------

PAGE_PATH = "/api/v1/documents/{document_id}/pages/{page}.png"


def test_the_schema_shows_a_documents_page_count(client):
    schema = json.loads(client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").content)
    uploaded = schema["paths"]["/api/v1/documents"]["post"]["responses"]["201"]["content"]["application/json"]
    read = schema["paths"]["/api/v1/documents/{document_id}"]["get"]["responses"]["200"]["content"]["application/json"]

    assert uploaded["schema"] == read["schema"]
    assert read["schema"]["properties"]["page_count"]["type"] == ["integer", "null"]
    assert "page_count" in read["schema"]["required"]


def test_the_schema_documents_the_page_image(client):
    schema = json.loads(client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").content)
    operation = schema["paths"][PAGE_PATH]["get"]
    parameters = {p["name"]: p for p in operation["parameters"]}
    responses = operation["responses"]

    assert parameters["dpi"]["schema"] == {"type": "integer", "minimum": 36, "maximum": 200, "default": 100}
    assert parameters["page"]["schema"] == {"type": "integer", "minimum": 1}
    assert parameters["If-None-Match"]["in"] == "header"
    assert responses["200"]["content"] == {"image/png": {"schema": {"type": "string", "format": "binary"}}}
    assert set(responses["200"]["headers"]) == set(responses["304"]["headers"]) == {"ETag", "Cache-Control"}
    assert set(
        responses["404"]["content"]["application/problem+json"]["schema"]["allOf"][1]["properties"]["type"]["enum"]
    ) == {
        "/problems/not-found",
        "/problems/page-out-of-range",
        "/problems/no-page-image",
    }
    assert responses["400"]["content"]["application/problem+json"]["schema"]["allOf"][1]["properties"]["type"] == {
        "enum": ["/problems/validation-error"]
    }
