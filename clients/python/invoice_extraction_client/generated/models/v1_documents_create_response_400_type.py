from enum import StrEnum


class V1DocumentsCreateResponse400Type(StrEnum):
    VALUE_0 = "/problems/bad-request"
    VALUE_1 = "/problems/malformed-request-body"
    VALUE_2 = "/problems/validation-error"

    def __str__(self) -> str:
        return str(self.value)
