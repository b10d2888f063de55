"""Reading values out of a parsed e-invoice by local element names, each with its XPath.

UBL and CII documents bind their namespaces to any prefix the sender likes, so elements are
matched by local name under a known parent, and a value's path is written with the prefixes
the standards' own documents use (``cac:``, ``cbc:``, ``rsm:``, ``ram:``, ...), 1-based indexes
only where siblings repeat: ``/Invoice/cac:InvoiceLine[2]/cbc:LineExtensionAmount``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter

from extraction.einvoice.model import Read

_PREFIXES = {
    "urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2": "cac",
    "urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2": "cbc",
    "urn:oasis:names:specification:ubl:schema:xsd:CommonExtensionComponents-2": "ext",
    "urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100": "rsm",
    "urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100": "ram",
    "urn:un:unece:uncefact:data:standard:UnqualifiedDataType:100": "udt",
    "urn:un:unece:uncefact:data:standard:QualifiedDataType:100": "qdt",
}


def local_name(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def namespace(tag: str) -> str:
    return tag[1:].split("}", 1)[0] if tag.startswith("{") else ""


def _qualified(tag: str) -> str:
    prefix = _PREFIXES.get(namespace(tag))
    return f"{prefix}:{local_name(tag)}" if prefix else local_name(tag)


class Elements:
    """A parsed document and the path of each of its elements."""

    def __init__(self, root: ET.Element) -> None:
        self.root = root
        # The root is written bare (``/Invoice``), as EN 16931's syntax bindings write it.
        self._paths: dict[ET.Element, str] = {root: "/" + local_name(root.tag)}
        # Iterative, so a deep document cannot exhaust the stack (the parser bounds depth too).
        pending = [root]
        while pending:
            parent = pending.pop()
            repeated = Counter(child.tag for child in parent)
            seen: Counter[str] = Counter()
            for child in parent:
                if not isinstance(child.tag, str):
                    continue
                step = _qualified(child.tag)
                if repeated[child.tag] > 1:
                    seen[child.tag] += 1
                    step += f"[{seen[child.tag]}]"
                self._paths[child] = f"{self._paths[parent]}/{step}"
                pending.append(child)

    def path(self, element: ET.Element) -> str:
        return self._paths[element]

    def children(self, element: ET.Element | None, name: str) -> list[ET.Element]:
        if element is None:
            return []
        return [child for child in element if isinstance(child.tag, str) and local_name(child.tag) == name]

    def find(self, element: ET.Element | None, *names: str) -> ET.Element | None:
        """The first element down ``names`` from ``element``, or None."""
        for name in names:
            found = self.children(element, name)
            element = found[0] if found else None
        return element

    def read(self, element: ET.Element | None, *names: str) -> Read | None:
        """The text of the element down ``names`` (whitespace collapsed), or None if absent or empty."""
        found = self.find(element, *names) if names else element
        return self.read_element(found)

    def read_element(self, element: ET.Element | None) -> Read | None:
        if element is None or element.text is None:
            return None
        text = " ".join(element.text.split())
        return Read(text=text, path=self._paths[element]) if text else None

    def first(self, *reads: Read | None) -> Read | None:
        return next((read for read in reads if read is not None), None)
