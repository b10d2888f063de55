from enum import IntEnum


class V1DocumentsCreateResponse422Status(IntEnum):
    VALUE_422 = 422

    def __str__(self) -> str:
        return str(self.value)
