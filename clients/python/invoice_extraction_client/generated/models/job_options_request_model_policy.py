from enum import StrEnum


class JobOptionsRequestModelPolicy(StrEnum):
    DEFAULT = "default"

    def __str__(self) -> str:
        return str(self.value)
