from enum import StrEnum


class V1DocumentsCreateResponse422Type(StrEnum):
    VALUE_0 = "/problems/document-too-many-pages"

    def __str__(self) -> str:
        return str(self.value)
