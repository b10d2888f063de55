from http import HTTPStatus
from typing import Any
from urllib.parse import quote
from uuid import UUID

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.v1_webhook_endpoints_verify_create_response_202 import (
    V1WebhookEndpointsVerifyCreateResponse202,
)
from ...models.v1_webhook_endpoints_verify_create_response_401 import (
    V1WebhookEndpointsVerifyCreateResponse401,
)
from ...models.v1_webhook_endpoints_verify_create_response_403 import (
    V1WebhookEndpointsVerifyCreateResponse403,
)
from ...models.v1_webhook_endpoints_verify_create_response_404 import (
    V1WebhookEndpointsVerifyCreateResponse404,
)
from ...models.v1_webhook_endpoints_verify_create_response_406 import (
    V1WebhookEndpointsVerifyCreateResponse406,
)
from ...models.v1_webhook_endpoints_verify_create_response_422 import (
    V1WebhookEndpointsVerifyCreateResponse422,
)
from ...types import Response


def _get_kwargs(
    endpoint_id: UUID,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/webhook-endpoints/{endpoint_id}/verify".format(
            endpoint_id=quote(str(endpoint_id), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> (
    V1WebhookEndpointsVerifyCreateResponse202
    | V1WebhookEndpointsVerifyCreateResponse401
    | V1WebhookEndpointsVerifyCreateResponse403
    | V1WebhookEndpointsVerifyCreateResponse404
    | V1WebhookEndpointsVerifyCreateResponse406
    | V1WebhookEndpointsVerifyCreateResponse422
    | None
):
    if response.status_code == 202:
        response_202 = V1WebhookEndpointsVerifyCreateResponse202.from_dict(response.json())

        return response_202

    if response.status_code == 401:
        response_401 = V1WebhookEndpointsVerifyCreateResponse401.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = V1WebhookEndpointsVerifyCreateResponse403.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = V1WebhookEndpointsVerifyCreateResponse404.from_dict(response.json())

        return response_404

    if response.status_code == 406:
        response_406 = V1WebhookEndpointsVerifyCreateResponse406.from_dict(response.json())

        return response_406

    if response.status_code == 422:
        response_422 = V1WebhookEndpointsVerifyCreateResponse422.from_dict(response.json())

        return response_422

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[
    V1WebhookEndpointsVerifyCreateResponse202
    | V1WebhookEndpointsVerifyCreateResponse401
    | V1WebhookEndpointsVerifyCreateResponse403
    | V1WebhookEndpointsVerifyCreateResponse404
    | V1WebhookEndpointsVerifyCreateResponse406
    | V1WebhookEndpointsVerifyCreateResponse422
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
    V1WebhookEndpointsVerifyCreateResponse202
    | V1WebhookEndpointsVerifyCreateResponse401
    | V1WebhookEndpointsVerifyCreateResponse403
    | V1WebhookEndpointsVerifyCreateResponse404
    | V1WebhookEndpointsVerifyCreateResponse406
    | V1WebhookEndpointsVerifyCreateResponse422
]:
    """
    Args:
        endpoint_id (UUID):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[V1WebhookEndpointsVerifyCreateResponse202 | V1WebhookEndpointsVerifyCreateResponse401 | V1WebhookEndpointsVerifyCreateResponse403 | V1WebhookEndpointsVerifyCreateResponse404 | V1WebhookEndpointsVerifyCreateResponse406 | V1WebhookEndpointsVerifyCreateResponse422]
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
    V1WebhookEndpointsVerifyCreateResponse202
    | V1WebhookEndpointsVerifyCreateResponse401
    | V1WebhookEndpointsVerifyCreateResponse403
    | V1WebhookEndpointsVerifyCreateResponse404
    | V1WebhookEndpointsVerifyCreateResponse406
    | V1WebhookEndpointsVerifyCreateResponse422
    | None
):
    """
    Args:
        endpoint_id (UUID):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        V1WebhookEndpointsVerifyCreateResponse202 | V1WebhookEndpointsVerifyCreateResponse401 | V1WebhookEndpointsVerifyCreateResponse403 | V1WebhookEndpointsVerifyCreateResponse404 | V1WebhookEndpointsVerifyCreateResponse406 | V1WebhookEndpointsVerifyCreateResponse422
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
    V1WebhookEndpointsVerifyCreateResponse202
    | V1WebhookEndpointsVerifyCreateResponse401
    | V1WebhookEndpointsVerifyCreateResponse403
    | V1WebhookEndpointsVerifyCreateResponse404
    | V1WebhookEndpointsVerifyCreateResponse406
    | V1WebhookEndpointsVerifyCreateResponse422
]:
    """
    Args:
        endpoint_id (UUID):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[V1WebhookEndpointsVerifyCreateResponse202 | V1WebhookEndpointsVerifyCreateResponse401 | V1WebhookEndpointsVerifyCreateResponse403 | V1WebhookEndpointsVerifyCreateResponse404 | V1WebhookEndpointsVerifyCreateResponse406 | V1WebhookEndpointsVerifyCreateResponse422]
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
    V1WebhookEndpointsVerifyCreateResponse202
    | V1WebhookEndpointsVerifyCreateResponse401
    | V1WebhookEndpointsVerifyCreateResponse403
    | V1WebhookEndpointsVerifyCreateResponse404
    | V1WebhookEndpointsVerifyCreateResponse406
    | V1WebhookEndpointsVerifyCreateResponse422
    | None
):
    """
    Args:
        endpoint_id (UUID):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        V1WebhookEndpointsVerifyCreateResponse202 | V1WebhookEndpointsVerifyCreateResponse401 | V1WebhookEndpointsVerifyCreateResponse403 | V1WebhookEndpointsVerifyCreateResponse404 | V1WebhookEndpointsVerifyCreateResponse406 | V1WebhookEndpointsVerifyCreateResponse422
    """

    return (
        await asyncio_detailed(
            endpoint_id=endpoint_id,
            client=client,
        )
    ).parsed
