from http import HTTPStatus
from typing import Any
from urllib.parse import quote
from uuid import UUID

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.v1_webhook_endpoints_retrieve_response_200 import (
    V1WebhookEndpointsRetrieveResponse200,
)
from ...models.v1_webhook_endpoints_retrieve_response_401 import (
    V1WebhookEndpointsRetrieveResponse401,
)
from ...models.v1_webhook_endpoints_retrieve_response_403 import (
    V1WebhookEndpointsRetrieveResponse403,
)
from ...models.v1_webhook_endpoints_retrieve_response_404 import (
    V1WebhookEndpointsRetrieveResponse404,
)
from ...models.v1_webhook_endpoints_retrieve_response_406 import (
    V1WebhookEndpointsRetrieveResponse406,
)
from ...types import Response


def _get_kwargs(
    endpoint_id: UUID,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/webhook-endpoints/{endpoint_id}".format(
            endpoint_id=quote(str(endpoint_id), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> (
    V1WebhookEndpointsRetrieveResponse200
    | V1WebhookEndpointsRetrieveResponse401
    | V1WebhookEndpointsRetrieveResponse403
    | V1WebhookEndpointsRetrieveResponse404
    | V1WebhookEndpointsRetrieveResponse406
    | None
):
    if response.status_code == 200:
        response_200 = V1WebhookEndpointsRetrieveResponse200.from_dict(response.json())

        return response_200

    if response.status_code == 401:
        response_401 = V1WebhookEndpointsRetrieveResponse401.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = V1WebhookEndpointsRetrieveResponse403.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = V1WebhookEndpointsRetrieveResponse404.from_dict(response.json())

        return response_404

    if response.status_code == 406:
        response_406 = V1WebhookEndpointsRetrieveResponse406.from_dict(response.json())

        return response_406

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[
    V1WebhookEndpointsRetrieveResponse200
    | V1WebhookEndpointsRetrieveResponse401
    | V1WebhookEndpointsRetrieveResponse403
    | V1WebhookEndpointsRetrieveResponse404
    | V1WebhookEndpointsRetrieveResponse406
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
    V1WebhookEndpointsRetrieveResponse200
    | V1WebhookEndpointsRetrieveResponse401
    | V1WebhookEndpointsRetrieveResponse403
    | V1WebhookEndpointsRetrieveResponse404
    | V1WebhookEndpointsRetrieveResponse406
]:
    """
    Args:
        endpoint_id (UUID):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[V1WebhookEndpointsRetrieveResponse200 | V1WebhookEndpointsRetrieveResponse401 | V1WebhookEndpointsRetrieveResponse403 | V1WebhookEndpointsRetrieveResponse404 | V1WebhookEndpointsRetrieveResponse406]
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
    V1WebhookEndpointsRetrieveResponse200
    | V1WebhookEndpointsRetrieveResponse401
    | V1WebhookEndpointsRetrieveResponse403
    | V1WebhookEndpointsRetrieveResponse404
    | V1WebhookEndpointsRetrieveResponse406
    | None
):
    """
    Args:
        endpoint_id (UUID):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        V1WebhookEndpointsRetrieveResponse200 | V1WebhookEndpointsRetrieveResponse401 | V1WebhookEndpointsRetrieveResponse403 | V1WebhookEndpointsRetrieveResponse404 | V1WebhookEndpointsRetrieveResponse406
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
    V1WebhookEndpointsRetrieveResponse200
    | V1WebhookEndpointsRetrieveResponse401
    | V1WebhookEndpointsRetrieveResponse403
    | V1WebhookEndpointsRetrieveResponse404
    | V1WebhookEndpointsRetrieveResponse406
]:
    """
    Args:
        endpoint_id (UUID):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[V1WebhookEndpointsRetrieveResponse200 | V1WebhookEndpointsRetrieveResponse401 | V1WebhookEndpointsRetrieveResponse403 | V1WebhookEndpointsRetrieveResponse404 | V1WebhookEndpointsRetrieveResponse406]
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
    V1WebhookEndpointsRetrieveResponse200
    | V1WebhookEndpointsRetrieveResponse401
    | V1WebhookEndpointsRetrieveResponse403
    | V1WebhookEndpointsRetrieveResponse404
    | V1WebhookEndpointsRetrieveResponse406
    | None
):
    """
    Args:
        endpoint_id (UUID):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        V1WebhookEndpointsRetrieveResponse200 | V1WebhookEndpointsRetrieveResponse401 | V1WebhookEndpointsRetrieveResponse403 | V1WebhookEndpointsRetrieveResponse404 | V1WebhookEndpointsRetrieveResponse406
    """

    return (
        await asyncio_detailed(
            endpoint_id=endpoint_id,
            client=client,
        )
    ).parsed
