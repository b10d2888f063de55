from enum import StrEnum


class RedeliverFilterStatesEnum(StrEnum):
    DELIVERED = "delivered"
    FAILED = "failed"

    def __str__(self) -> str:
        return str(self.value)
