from enum import StrEnum


class FieldTrustSourcesItem(StrEnum):
    EINVOICE = "einvoice"
    MODEL = "model"
    REVIEWER = "reviewer"
    RULES = "rules"

    def __str__(self) -> str:
        return str(self.value)
