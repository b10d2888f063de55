from enum import StrEnum


class InvoiceV2Schema(StrEnum):
    INVOICE_V2 = "invoice.v2"

    def __str__(self) -> str:
        return str(self.value)
