from enum import StrEnum


class V1ExtractionBatchesCreateResponse400Type(StrEnum):
    VALUE_0 = "/problems/bad-request"
    VALUE_1 = "/problems/idempotency-key-invalid"
    VALUE_2 = "/problems/idempotency-key-missing"
    VALUE_3 = "/problems/malformed-request-body"
    VALUE_4 = "/problems/validation-error"

    def __str__(self) -> str:
        return str(self.value)
