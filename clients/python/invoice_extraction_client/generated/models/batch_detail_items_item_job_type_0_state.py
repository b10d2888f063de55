from enum import StrEnum


class BatchDetailItemsItemJobType0State(StrEnum):
    ACCEPTED = "ACCEPTED"
    FAILED_TERMINAL = "FAILED_TERMINAL"
    READY = "READY"
    RETRY_SCHEDULED = "RETRY_SCHEDULED"
    REVIEW_REQUIRED = "REVIEW_REQUIRED"
    RUNNING = "RUNNING"
    SPLIT = "SPLIT"
    SUCCEEDED = "SUCCEEDED"

    def __str__(self) -> str:
        return str(self.value)
