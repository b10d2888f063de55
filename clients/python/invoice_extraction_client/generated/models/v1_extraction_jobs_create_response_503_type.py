from enum import StrEnum


class V1ExtractionJobsCreateResponse503Type(StrEnum):
    VALUE_0 = "/problems/accept-capacity-exhausted"

    def __str__(self) -> str:
        return str(self.value)
