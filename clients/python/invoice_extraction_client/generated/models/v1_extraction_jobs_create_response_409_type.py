from enum import StrEnum


class V1ExtractionJobsCreateResponse409Type(StrEnum):
    VALUE_0 = "/problems/idempotency-key-conflict"

    def __str__(self) -> str:
        return str(self.value)
