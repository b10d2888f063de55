from enum import StrEnum


class V1ExtractionBatchesCreateResponse413Type(StrEnum):
    VALUE_0 = "/problems/archive-too-large"
    VALUE_1 = "/problems/batch-too-many-files"
    VALUE_2 = "/problems/payload-too-large"

    def __str__(self) -> str:
        return str(self.value)
