from enum import StrEnum


class V1DocumentsPagesPngRetrieveResponse404Type(StrEnum):
    VALUE_0 = "/problems/no-page-image"
    VALUE_1 = "/problems/not-found"
    VALUE_2 = "/problems/page-out-of-range"

    def __str__(self) -> str:
        return str(self.value)
