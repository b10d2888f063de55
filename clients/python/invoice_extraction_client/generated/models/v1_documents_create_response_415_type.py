from enum import StrEnum


class V1DocumentsCreateResponse415Type(StrEnum):
    VALUE_0 = "/problems/unsupported-document-type"
    VALUE_1 = "/problems/unsupported-media-type"

    def __str__(self) -> str:
        return str(self.value)
