from enum import IntEnum


class V1ExtractionBatchesRetrieveResponse404Status(IntEnum):
    VALUE_404 = 404

    def __str__(self) -> str:
        return str(self.value)
