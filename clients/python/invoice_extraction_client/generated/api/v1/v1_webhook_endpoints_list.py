from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.v1_webhook_endpoints_list_response_200 import (
    V1WebhookEndpointsListResponse200,
)
from ...models.v1_webhook_endpoints_list_response_401 import (
    V1WebhookEndpointsListResponse401,
)
from ...models.v1_webhook_endpoints_list_response_403 import (
    V1WebhookEndpointsListResponse403,
)
from ...models.v1_webhook_endpoints_list_response_406 import (
    V1WebhookEndpointsListResponse406,
)
from ...types import Response


def _get_kwargs() -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/webhook-endpoints",
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> (
    V1WebhookEndpointsListResponse200
    | V1WebhookEndpointsListResponse401
    | V1WebhookEndpointsListResponse403
    | V1WebhookEndpointsListResponse406
    | None
):
    if response.status_code == 200:
        response_200 = V1WebhookEndpointsListResponse200.from_dict(response.json())

        return response_200

    if response.status_code == 401:
        response_401 = V1WebhookEndpointsListResponse401.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = V1WebhookEndpointsListResponse403.from_dict(response.json())

        return response_403

    if response.status_code == 406:
        response_406 = V1WebhookEndpointsListResponse406.from_dict(response.json())

        return response_406

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[
    V1WebhookEndpointsListResponse200
    | V1WebhookEndpointsListResponse401
    | V1WebhookEndpointsListResponse403
    | V1WebhookEndpointsListResponse406
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
) -> Response[
    V1WebhookEndpointsListResponse200
    | V1WebhookEndpointsListResponse401
    | V1WebhookEndpointsListResponse403
    | V1WebhookEndpointsListResponse406
]:
    """
    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[V1WebhookEndpointsListResponse200 | V1WebhookEndpointsListResponse401 | V1WebhookEndpointsListResponse403 | V1WebhookEndpointsListResponse406]
    """

    kwargs = _get_kwargs()

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
) -> (
    V1WebhookEndpointsListResponse200
    | V1WebhookEndpointsListResponse401
    | V1WebhookEndpointsListResponse403
    | V1WebhookEndpointsListResponse406
    | None
):
    """
    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        V1WebhookEndpointsListResponse200 | V1WebhookEndpointsListResponse401 | V1WebhookEndpointsListResponse403 | V1WebhookEndpointsListResponse406
    """

    return sync_detailed(
        client=client,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
) -> Response[
    V1WebhookEndpointsListResponse200
    | V1WebhookEndpointsListResponse401
    | V1WebhookEndpointsListResponse403
    | V1WebhookEndpointsListResponse406
]:
    """
    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[V1WebhookEndpointsListResponse200 | V1WebhookEndpointsListResponse401 | V1WebhookEndpointsListResponse403 | V1WebhookEndpointsListResponse406]
    """

    kwargs = _get_kwargs()

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
) -> (
    V1WebhookEndpointsListResponse200
    | V1WebhookEndpointsListResponse401
    | V1WebhookEndpointsListResponse403
    | V1WebhookEndpointsListResponse406
    | None
):
    """
    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        V1WebhookEndpointsListResponse200 | V1WebhookEndpointsListResponse401 | V1WebhookEndpointsListResponse403 | V1WebhookEndpointsListResponse406
    """

    return (
        await asyncio_detailed(
            client=client,
        )
    ).parsed
