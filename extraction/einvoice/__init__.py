"""Structured e-invoices read exactly: UBL 2.1 (XRechnung, Peppol BIS, UBL-TR e-Fatura) and
UN/CEFACT CII (Factur-X/ZUGFeRD, XRechnung), with no language model involved.

:func:`read_einvoice` parses the XML safely (:mod:`.xml_input`) into EN 16931's model
(:mod:`.model`), each value with its element path; :func:`.rendering.render` prints it as an
invoice's text, and :func:`.answer.invoice_v1_answer` states it as an extraction result whose
evidence points into that text.
"""

from __future__ import annotations

from extraction.einvoice.cii import CII, read_cii
from extraction.einvoice.elements import Elements, local_name, namespace
from extraction.einvoice.model import EInvoice
from extraction.einvoice.ubl import UBL_CREDIT_NOTE, UBL_INVOICE, read_ubl
from extraction.einvoice.xml_input import RefusedXml, parse_xml

__all__ = ["EInvoice", "RefusedXml", "read_einvoice"]

_ZUGFERD_1 = "urn:ferd:CrossIndustryDocument:invoice:1p0"


def read_einvoice(data: bytes) -> EInvoice:
    """The e-invoice ``data`` holds, or :class:`RefusedXml` saying why it is not one we read."""
    root = parse_xml(data)
    tag = (namespace(root.tag), local_name(root.tag))
    if tag in ((UBL_INVOICE, "Invoice"), (UBL_CREDIT_NOTE, "CreditNote")):
        return read_ubl(Elements(root))
    if tag == (CII, "CrossIndustryInvoice"):
        return read_cii(Elements(root))
    if tag == (_ZUGFERD_1, "CrossIndustryDocument"):
        raise RefusedXml("ZUGFeRD 1.0 (CrossIndustryDocument) predates EN 16931 and is not read")
    raise RefusedXml(f"the XML is not a UBL 2.1 or CII invoice (root element {{{tag[0]}}}{tag[1]})")
