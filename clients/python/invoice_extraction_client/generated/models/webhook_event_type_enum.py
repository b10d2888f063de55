from enum import StrEnum


class WebhookEventTypeEnum(StrEnum):
    EXTRACTION_BATCH_COMPLETED_V1 = "extraction.batch_completed.v1"
    EXTRACTION_COMPLETED_V1 = "extraction.completed.v1"
    EXTRACTION_FAILED_V1 = "extraction.failed.v1"
    EXTRACTION_REVIEW_REQUIRED_V1 = "extraction.review_required.v1"
    EXTRACTION_SPLIT_V1 = "extraction.split.v1"

    def __str__(self) -> str:
        return str(self.value)
