from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.endpoint_create_request import EndpointCreateRequest
from ...models.v1_webhook_endpoints_create_response_201 import (
    V1WebhookEndpointsCreateResponse201,
)
from ...models.v1_webhook_endpoints_create_response_400 import (
    V1WebhookEndpointsCreateResponse400,
)
from ...models.v1_webhook_endpoints_create_response_401 import (
    V1WebhookEndpointsCreateResponse401,
)
from ...models.v1_webhook_endpoints_create_response_403 import (
    V1WebhookEndpointsCreateResponse403,
)
from ...models.v1_webhook_endpoints_create_response_406 import (
    V1WebhookEndpointsCreateResponse406,
)
from ...models.v1_webhook_endpoints_create_response_413 import (
    V1WebhookEndpointsCreateResponse413,
)
from ...models.v1_webhook_endpoints_create_response_415 import (
    V1WebhookEndpointsCreateResponse415,
)
from ...models.v1_webhook_endpoints_create_response_422 import (
    V1WebhookEndpointsCreateResponse422,
)
from ...types import Response


def _get_kwargs(
    *,
    body: EndpointCreateRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/webhook-endpoints",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> (
    V1WebhookEndpointsCreateResponse201
    | V1WebhookEndpointsCreateResponse400
    | V1WebhookEndpointsCreateResponse401
    | V1WebhookEndpointsCreateResponse403
    | V1WebhookEndpointsCreateResponse406
    | V1WebhookEndpointsCreateResponse413
    | V1WebhookEndpointsCreateResponse415
    | V1WebhookEndpointsCreateResponse422
    | None
):
    if response.status_code == 201:
        response_201 = V1WebhookEndpointsCreateResponse201.from_dict(response.json())

        return response_201

    if response.status_code == 400:
        response_400 = V1WebhookEndpointsCreateResponse400.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = V1WebhookEndpointsCreateResponse401.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = V1WebhookEndpointsCreateResponse403.from_dict(response.json())

        return response_403

    if response.status_code == 406:
        response_406 = V1WebhookEndpointsCreateResponse406.from_dict(response.json())

        return response_406

    if response.status_code == 413:
        response_413 = V1WebhookEndpointsCreateResponse413.from_dict(response.json())

        return response_413

    if response.status_code == 415:
        response_415 = V1WebhookEndpointsCreateResponse415.from_dict(response.json())

        return response_415

    if response.status_code == 422:
        response_422 = V1WebhookEndpointsCreateResponse422.from_dict(response.json())

        return response_422

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[
    V1WebhookEndpointsCreateResponse201
    | V1WebhookEndpointsCreateResponse400
    | V1WebhookEndpointsCreateResponse401
    | V1WebhookEndpointsCreateResponse403
    | V1WebhookEndpointsCreateResponse406
    | V1WebhookEndpointsCreateResponse413
    | V1WebhookEndpointsCreateResponse415
    | V1WebhookEndpointsCreateResponse422
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
    body: EndpointCreateRequest,
) -> Response[
    V1WebhookEndpointsCreateResponse201
    | V1WebhookEndpointsCreateResponse400
    | V1WebhookEndpointsCreateResponse401
    | V1WebhookEndpointsCreateResponse403
    | V1WebhookEndpointsCreateResponse406
    | V1WebhookEndpointsCreateResponse413
    | V1WebhookEndpointsCreateResponse415
    | V1WebhookEndpointsCreateResponse422
]:
    """
    Args:
        body (EndpointCreateRequest): Rejects members it does not know, so a typo in a field name
            is an error, not a default.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[V1WebhookEndpointsCreateResponse201 | V1WebhookEndpointsCreateResponse400 | V1WebhookEndpointsCreateResponse401 | V1WebhookEndpointsCreateResponse403 | V1WebhookEndpointsCreateResponse406 | V1WebhookEndpointsCreateResponse413 | V1WebhookEndpointsCreateResponse415 | V1WebhookEndpointsCreateResponse422]
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
    body: EndpointCreateRequest,
) -> (
    V1WebhookEndpointsCreateResponse201
    | V1WebhookEndpointsCreateResponse400
    | V1WebhookEndpointsCreateResponse401
    | V1WebhookEndpointsCreateResponse403
    | V1WebhookEndpointsCreateResponse406
    | V1WebhookEndpointsCreateResponse413
    | V1WebhookEndpointsCreateResponse415
    | V1WebhookEndpointsCreateResponse422
    | None
):
    """
    Args:
        body (EndpointCreateRequest): Rejects members it does not know, so a typo in a field name
            is an error, not a default.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        V1WebhookEndpointsCreateResponse201 | V1WebhookEndpointsCreateResponse400 | V1WebhookEndpointsCreateResponse401 | V1WebhookEndpointsCreateResponse403 | V1WebhookEndpointsCreateResponse406 | V1WebhookEndpointsCreateResponse413 | V1WebhookEndpointsCreateResponse415 | V1WebhookEndpointsCreateResponse422
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: EndpointCreateRequest,
) -> Response[
    V1WebhookEndpointsCreateResponse201
    | V1WebhookEndpointsCreateResponse400
    | V1WebhookEndpointsCreateResponse401
    | V1WebhookEndpointsCreateResponse403
    | V1WebhookEndpointsCreateResponse406
    | V1WebhookEndpointsCreateResponse413
    | V1WebhookEndpointsCreateResponse415
    | V1WebhookEndpointsCreateResponse422
]:
    """
    Args:
        body (EndpointCreateRequest): Rejects members it does not know, so a typo in a field name
            is an error, not a default.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[V1WebhookEndpointsCreateResponse201 | V1WebhookEndpointsCreateResponse400 | V1WebhookEndpointsCreateResponse401 | V1WebhookEndpointsCreateResponse403 | V1WebhookEndpointsCreateResponse406 | V1WebhookEndpointsCreateResponse413 | V1WebhookEndpointsCreateResponse415 | V1WebhookEndpointsCreateResponse422]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: EndpointCreateRequest,
) -> (
    V1WebhookEndpointsCreateResponse201
    | V1WebhookEndpointsCreateResponse400
    | V1WebhookEndpointsCreateResponse401
    | V1WebhookEndpointsCreateResponse403
    | V1WebhookEndpointsCreateResponse406
    | V1WebhookEndpointsCreateResponse413
    | V1WebhookEndpointsCreateResponse415
    | V1WebhookEndpointsCreateResponse422
    | None
):
    """
    Args:
        body (EndpointCreateRequest): Rejects members it does not know, so a typo in a field name
            is an error, not a default.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        V1WebhookEndpointsCreateResponse201 | V1WebhookEndpointsCreateResponse400 | V1WebhookEndpointsCreateResponse401 | V1WebhookEndpointsCreateResponse403 | V1WebhookEndpointsCreateResponse406 | V1WebhookEndpointsCreateResponse413 | V1WebhookEndpointsCreateResponse415 | V1WebhookEndpointsCreateResponse422
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
