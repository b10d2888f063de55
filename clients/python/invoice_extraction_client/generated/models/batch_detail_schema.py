from enum import StrEnum


class BatchDetailSchema(StrEnum):
    INVOICE_V1 = "invoice.v1"
    INVOICE_V2 = "invoice.v2"

    def __str__(self) -> str:
        return str(self.value)
