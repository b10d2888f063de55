from enum import StrEnum


class V1ExtractionJobsCreateResponse400Type(StrEnum):
    VALUE_0 = "/problems/idempotency-key-invalid"
    VALUE_1 = "/problems/idempotency-key-missing"
    VALUE_2 = "/problems/malformed-request-body"
    VALUE_3 = "/problems/validation-error"

    def __str__(self) -> str:
        return str(self.value)
