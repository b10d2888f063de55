from enum import StrEnum


class InvoiceV1Schema(StrEnum):
    INVOICE_V1 = "invoice.v1"

    def __str__(self) -> str:
        return str(self.value)
