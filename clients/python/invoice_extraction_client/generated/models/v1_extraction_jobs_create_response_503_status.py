from enum import IntEnum


class V1ExtractionJobsCreateResponse503Status(IntEnum):
    VALUE_503 = 503

    def __str__(self) -> str:
        return str(self.value)
