from enum import StrEnum


class V1WebhookEndpointsVerifyCreateResponse422Type(StrEnum):
    VALUE_0 = "/problems/invalid-webhook-endpoint"

    def __str__(self) -> str:
        return str(self.value)
