from enum import StrEnum


class V1WebhookEndpointsDeliveriesRetrieveState(StrEnum):
    DELIVERED = "delivered"
    FAILED = "failed"
    PENDING = "pending"
    SENDING = "sending"

    def __str__(self) -> str:
        return str(self.value)
