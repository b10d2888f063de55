from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote
from uuid import UUID

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.v1_webhook_endpoints_destroy_response_401 import (
    V1WebhookEndpointsDestroyResponse401,
)
from ...models.v1_webhook_endpoints_destroy_response_403 import (
    V1WebhookEndpointsDestroyResponse403,
)
from ...models.v1_webhook_endpoints_destroy_response_404 import (
    V1WebhookEndpointsDestroyResponse404,
)
from ...models.v1_webhook_endpoints_destroy_response_406 import (
    V1WebhookEndpointsDestroyResponse406,
)
from ...types import Response


def _get_kwargs(
    endpoint_id: UUID,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "delete",
        "url": "/api/v1/webhook-endpoints/{endpoint_id}".format(
            endpoint_id=quote(str(endpoint_id), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> (
    Any
    | V1WebhookEndpointsDestroyResponse401
    | V1WebhookEndpointsDestroyResponse403
    | V1WebhookEndpointsDestroyResponse404
    | V1WebhookEndpointsDestroyResponse406
    | None
):
    if response.status_code == 204:
        response_204 = cast(Any, None)
        return response_204

    if response.status_code == 401:
        response_401 = V1WebhookEndpointsDestroyResponse401.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = V1WebhookEndpointsDestroyResponse403.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = V1WebhookEndpointsDestroyResponse404.from_dict(response.json())

        return response_404

    if response.status_code == 406:
        response_406 = V1WebhookEndpointsDestroyResponse406.from_dict(response.json())

        return response_406

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[
    Any
    | V1WebhookEndpointsDestroyResponse401
    | V1WebhookEndpointsDestroyResponse403
    | V1WebhookEndpointsDestroyResponse404
    | V1WebhookEndpointsDestroyResponse406
]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    endpoint_id: UUID,
    *,
    client: AuthenticatedClient,
) -> Response[
    Any
    | V1WebhookEndpointsDestroyResponse401
    | V1WebhookEndpointsDestroyResponse403
    | V1WebhookEndpointsDestroyResponse404
    | V1WebhookEndpointsDestroyResponse406
]:
    """Disables the endpoint: it stays readable (status `disabled`, its deliveries kept) and a verification
    turns it on again.

    Args:
        endpoint_id (UUID):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | V1WebhookEndpointsDestroyResponse401 | V1WebhookEndpointsDestroyResponse403 | V1WebhookEndpointsDestroyResponse404 | V1WebhookEndpointsDestroyResponse406]
    """

    kwargs = _get_kwargs(
        endpoint_id=endpoint_id,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    endpoint_id: UUID,
    *,
    client: AuthenticatedClient,
) -> (
    Any
    | V1WebhookEndpointsDestroyResponse401
    | V1WebhookEndpointsDestroyResponse403
    | V1WebhookEndpointsDestroyResponse404
    | V1WebhookEndpointsDestroyResponse406
    | None
):
    """Disables the endpoint: it stays readable (status `disabled`, its deliveries kept) and a verification
    turns it on again.

    Args:
        endpoint_id (UUID):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | V1WebhookEndpointsDestroyResponse401 | V1WebhookEndpointsDestroyResponse403 | V1WebhookEndpointsDestroyResponse404 | V1WebhookEndpointsDestroyResponse406
    """

    return sync_detailed(
        endpoint_id=endpoint_id,
        client=client,
    ).parsed


async def asyncio_detailed(
    endpoint_id: UUID,
    *,
    client: AuthenticatedClient,
) -> Response[
    Any
    | V1WebhookEndpointsDestroyResponse401
    | V1WebhookEndpointsDestroyResponse403
    | V1WebhookEndpointsDestroyResponse404
    | V1WebhookEndpointsDestroyResponse406
]:
    """Disables the endpoint: it stays readable (status `disabled`, its deliveries kept) and a verification
    turns it on again.

    Args:
        endpoint_id (UUID):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | V1WebhookEndpointsDestroyResponse401 | V1WebhookEndpointsDestroyResponse403 | V1WebhookEndpointsDestroyResponse404 | V1WebhookEndpointsDestroyResponse406]
    """

    kwargs = _get_kwargs(
        endpoint_id=endpoint_id,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    endpoint_id: UUID,
    *,
    client: AuthenticatedClient,
) -> (
    Any
    | V1WebhookEndpointsDestroyResponse401
    | V1WebhookEndpointsDestroyResponse403
    | V1WebhookEndpointsDestroyResponse404
    | V1WebhookEndpointsDestroyResponse406
    | None
):
    """Disables the endpoint: it stays readable (status `disabled`, its deliveries kept) and a verification
    turns it on again.

    Args:
        endpoint_id (UUID):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | V1WebhookEndpointsDestroyResponse401 | V1WebhookEndpointsDestroyResponse403 | V1WebhookEndpointsDestroyResponse404 | V1WebhookEndpointsDestroyResponse406
    """

    return (
        await asyncio_detailed(
            endpoint_id=endpoint_id,
            client=client,
        )
    ).parsed
