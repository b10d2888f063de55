from enum import StrEnum


class PriorityEnum(StrEnum):
    BATCH = "batch"
    INTERACTIVE = "interactive"

    def __str__(self) -> str:
        return str(self.value)
