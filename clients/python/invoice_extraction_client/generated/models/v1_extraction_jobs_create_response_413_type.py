from enum import StrEnum


class V1ExtractionJobsCreateResponse413Type(StrEnum):
    VALUE_0 = "/problems/payload-too-large"

    def __str__(self) -> str:
        return str(self.value)
