from enum import StrEnum


class InvoiceV2DocumentTypeValueType2Type1(StrEnum):
    CREDIT_NOTE = "credit_note"
    INVOICE = "invoice"

    def __str__(self) -> str:
        return str(self.value)
