"""Parsing an e-invoice's XML without trusting it.

An uploaded XML, or one attached to a PDF, is supplier-controlled input. It is parsed by the
standard library's expat through ``defusedxml`` with every DTD refused: no entity expansion
(billion laughs), no external entity or DTD fetch (XXE), nothing read from the network or the
disk. EN 16931 syntaxes (UBL 2.1, UN/CEFACT CII D16B) need no DTD, so refusing one costs a
legitimate invoice nothing. Size and depth are bounded before and during the parse, so a
hostile file ends as :class:`RefusedXml` with a reason, never as a hang or an exhausted worker.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import DefusedXMLParser

# A UBL or CII invoice is tens of kilobytes; XRechnung may embed attachments (BG-24) as
# base64, which is where the megabytes of a real one come from.
MAX_XML_BYTES = 16 * 1024 * 1024
# The deepest real path (a CII line's allowance reason) is about ten elements down.
MAX_XML_DEPTH = 64


class RefusedXml(ValueError):
    """An XML document we will not read; ``reason`` says why and is stored with the job."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _DepthLimitedBuilder(ET.TreeBuilder):
    def __init__(self) -> None:
        super().__init__()
        self._depth = 0

    def start(self, tag: Any, attrs: Any) -> ET.Element:
        self._depth += 1
        if self._depth > MAX_XML_DEPTH:
            raise RefusedXml(f"the XML nests deeper than {MAX_XML_DEPTH} elements")
        return super().start(tag, attrs)

    def end(self, tag: Any) -> ET.Element:
        self._depth -= 1
        return super().end(tag)


def parse_xml(data: bytes) -> ET.Element:
    """The root element of ``data``, or :class:`RefusedXml`."""
    if len(data) > MAX_XML_BYTES:
        raise RefusedXml(f"the XML is {len(data)} bytes; at most {MAX_XML_BYTES} are read")
    parser = DefusedXMLParser(
        target=_DepthLimitedBuilder(), forbid_dtd=True, forbid_entities=True, forbid_external=True
    )
    try:
        parser.feed(data)
        root: ET.Element = parser.close()
    except RefusedXml:
        raise
    except DefusedXmlException as exc:
        raise RefusedXml(
            f"the XML declares a DTD or entities, which e-invoices never need ({type(exc).__name__})"
        ) from None
    except ET.ParseError as exc:
        raise RefusedXml(f"the XML is not well-formed: {exc}") from None
    return root
