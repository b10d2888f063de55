from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.redeliver_request import RedeliverRequest
from ...models.v1_webhook_deliveries_redeliver_response_201 import (
    V1WebhookDeliveriesRedeliverResponse201,
)
from ...models.v1_webhook_deliveries_redeliver_response_400 import (
    V1WebhookDeliveriesRedeliverResponse400,
)
from ...models.v1_webhook_deliveries_redeliver_response_401 import (
    V1WebhookDeliveriesRedeliverResponse401,
)
from ...models.v1_webhook_deliveries_redeliver_response_403 import (
    V1WebhookDeliveriesRedeliverResponse403,
)
from ...models.v1_webhook_deliveries_redeliver_response_406 import (
    V1WebhookDeliveriesRedeliverResponse406,
)
from ...models.v1_webhook_deliveries_redeliver_response_413 import (
    V1WebhookDeliveriesRedeliverResponse413,
)
from ...models.v1_webhook_deliveries_redeliver_response_415 import (
    V1WebhookDeliveriesRedeliverResponse415,
)
from ...types import Response


def _get_kwargs(
    *,
    body: RedeliverRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/webhook-deliveries/redeliver",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> (
    V1WebhookDeliveriesRedeliverResponse201
    | V1WebhookDeliveriesRedeliverResponse400
    | V1WebhookDeliveriesRedeliverResponse401
    | V1WebhookDeliveriesRedeliverResponse403
    | V1WebhookDeliveriesRedeliverResponse406
    | V1WebhookDeliveriesRedeliverResponse413
    | V1WebhookDeliveriesRedeliverResponse415
    | None
):
    if response.status_code == 201:
        response_201 = V1WebhookDeliveriesRedeliverResponse201.from_dict(response.json())

        return response_201

    if response.status_code == 400:
        response_400 = V1WebhookDeliveriesRedeliverResponse400.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = V1WebhookDeliveriesRedeliverResponse401.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = V1WebhookDeliveriesRedeliverResponse403.from_dict(response.json())

        return response_403

    if response.status_code == 406:
        response_406 = V1WebhookDeliveriesRedeliverResponse406.from_dict(response.json())

        return response_406

    if response.status_code == 413:
        response_413 = V1WebhookDeliveriesRedeliverResponse413.from_dict(response.json())

        return response_413

    if response.status_code == 415:
        response_415 = V1WebhookDeliveriesRedeliverResponse415.from_dict(response.json())

        return response_415

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[
    V1WebhookDeliveriesRedeliverResponse201
    | V1WebhookDeliveriesRedeliverResponse400
    | V1WebhookDeliveriesRedeliverResponse401
    | V1WebhookDeliveriesRedeliverResponse403
    | V1WebhookDeliveriesRedeliverResponse406
    | V1WebhookDeliveriesRedeliverResponse413
    | V1WebhookDeliveriesRedeliverResponse415
]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: RedeliverRequest,
) -> Response[
    V1WebhookDeliveriesRedeliverResponse201
    | V1WebhookDeliveriesRedeliverResponse400
    | V1WebhookDeliveriesRedeliverResponse401
    | V1WebhookDeliveriesRedeliverResponse403
    | V1WebhookDeliveriesRedeliverResponse406
    | V1WebhookDeliveriesRedeliverResponse413
    | V1WebhookDeliveriesRedeliverResponse415
]:
    """Send the tenant's failed (or delivered) deliveries matching the filter again.

    Args:
        body (RedeliverRequest): Rejects members it does not know, so a typo in a field name is an
            error, not a default.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[V1WebhookDeliveriesRedeliverResponse201 | V1WebhookDeliveriesRedeliverResponse400 | V1WebhookDeliveriesRedeliverResponse401 | V1WebhookDeliveriesRedeliverResponse403 | V1WebhookDeliveriesRedeliverResponse406 | V1WebhookDeliveriesRedeliverResponse413 | V1WebhookDeliveriesRedeliverResponse415]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    body: RedeliverRequest,
) -> (
    V1WebhookDeliveriesRedeliverResponse201
    | V1WebhookDeliveriesRedeliverResponse400
    | V1WebhookDeliveriesRedeliverResponse401
    | V1WebhookDeliveriesRedeliverResponse403
    | V1WebhookDeliveriesRedeliverResponse406
    | V1WebhookDeliveriesRedeliverResponse413
    | V1WebhookDeliveriesRedeliverResponse415
    | None
):
    """Send the tenant's failed (or delivered) deliveries matching the filter again.

    Args:
        body (RedeliverRequest): Rejects members it does not know, so a typo in a field name is an
            error, not a default.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        V1WebhookDeliveriesRedeliverResponse201 | V1WebhookDeliveriesRedeliverResponse400 | V1WebhookDeliveriesRedeliverResponse401 | V1WebhookDeliveriesRedeliverResponse403 | V1WebhookDeliveriesRedeliverResponse406 | V1WebhookDeliveriesRedeliverResponse413 | V1WebhookDeliveriesRedeliverResponse415
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: RedeliverRequest,
) -> Response[
    V1WebhookDeliveriesRedeliverResponse201
    | V1WebhookDeliveriesRedeliverResponse400
    | V1WebhookDeliveriesRedeliverResponse401
    | V1WebhookDeliveriesRedeliverResponse403
    | V1WebhookDeliveriesRedeliverResponse406
    | V1WebhookDeliveriesRedeliverResponse413
    | V1WebhookDeliveriesRedeliverResponse415
]:
    """Send the tenant's failed (or delivered) deliveries matching the filter again.

    Args:
        body (RedeliverRequest): Rejects members it does not know, so a typo in a field name is an
            error, not a default.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[V1WebhookDeliveriesRedeliverResponse201 | V1WebhookDeliveriesRedeliverResponse400 | V1WebhookDeliveriesRedeliverResponse401 | V1WebhookDeliveriesRedeliverResponse403 | V1WebhookDeliveriesRedeliverResponse406 | V1WebhookDeliveriesRedeliverResponse413 | V1WebhookDeliveriesRedeliverResponse415]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: RedeliverRequest,
) -> (
    V1WebhookDeliveriesRedeliverResponse201
    | V1WebhookDeliveriesRedeliverResponse400
    | V1WebhookDeliveriesRedeliverResponse401
    | V1WebhookDeliveriesRedeliverResponse403
    | V1WebhookDeliveriesRedeliverResponse406
    | V1WebhookDeliveriesRedeliverResponse413
    | V1WebhookDeliveriesRedeliverResponse415
    | None
):
    """Send the tenant's failed (or delivered) deliveries matching the filter again.

    Args:
        body (RedeliverRequest): Rejects members it does not know, so a typo in a field name is an
            error, not a default.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        V1WebhookDeliveriesRedeliverResponse201 | V1WebhookDeliveriesRedeliverResponse400 | V1WebhookDeliveriesRedeliverResponse401 | V1WebhookDeliveriesRedeliverResponse403 | V1WebhookDeliveriesRedeliverResponse406 | V1WebhookDeliveriesRedeliverResponse413 | V1WebhookDeliveriesRedeliverResponse415
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
