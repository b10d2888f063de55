from enum import StrEnum


class V1WebhookEndpointsCreateResponse422Type(StrEnum):
    VALUE_0 = "/problems/invalid-webhook-endpoint"

    def __str__(self) -> str:
        return str(self.value)
