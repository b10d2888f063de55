from enum import StrEnum


class FieldTrustStatus(StrEnum):
    CONFLICTING = "conflicting"
    DERIVED = "derived"
    MISSING = "missing"
    UNVERIFIED = "unverified"
    VERIFIED = "verified"

    def __str__(self) -> str:
        return str(self.value)
