from enum import IntEnum


class V1ExtractionJobsCreateResponse429Status(IntEnum):
    VALUE_429 = 429

    def __str__(self) -> str:
        return str(self.value)
