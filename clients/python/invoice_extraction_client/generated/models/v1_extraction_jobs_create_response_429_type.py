from enum import StrEnum


class V1ExtractionJobsCreateResponse429Type(StrEnum):
    VALUE_0 = "/problems/tenant-limit-exceeded"

    def __str__(self) -> str:
        return str(self.value)
