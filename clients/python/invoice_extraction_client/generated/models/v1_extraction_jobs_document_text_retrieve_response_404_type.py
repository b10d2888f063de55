from enum import StrEnum


class V1ExtractionJobsDocumentTextRetrieveResponse404Type(StrEnum):
    VALUE_0 = "/problems/document-text-not-ready"
    VALUE_1 = "/problems/not-found"

    def __str__(self) -> str:
        return str(self.value)
