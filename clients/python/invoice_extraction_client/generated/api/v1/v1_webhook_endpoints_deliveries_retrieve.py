from http import HTTPStatus
from typing import Any
from urllib.parse import quote
from uuid import UUID

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.v1_webhook_endpoints_deliveries_retrieve_response_200 import (
    V1WebhookEndpointsDeliveriesRetrieveResponse200,
)
from ...models.v1_webhook_endpoints_deliveries_retrieve_response_400 import (
    V1WebhookEndpointsDeliveriesRetrieveResponse400,
)
from ...models.v1_webhook_endpoints_deliveries_retrieve_response_401 import (
    V1WebhookEndpointsDeliveriesRetrieveResponse401,
)
from ...models.v1_webhook_endpoints_deliveries_retrieve_response_403 import (
    V1WebhookEndpointsDeliveriesRetrieveResponse403,
)
from ...models.v1_webhook_endpoints_deliveries_retrieve_response_404 import (
    V1WebhookEndpointsDeliveriesRetrieveResponse404,
)
from ...models.v1_webhook_endpoints_deliveries_retrieve_response_406 import (
    V1WebhookEndpointsDeliveriesRetrieveResponse406,
)
from ...models.v1_webhook_endpoints_deliveries_retrieve_state import (
    V1WebhookEndpointsDeliveriesRetrieveState,
)
from ...types import UNSET, Response, Unset


def _get_kwargs(
    endpoint_id: UUID,
    *,
    state: V1WebhookEndpointsDeliveriesRetrieveState | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    json_state: str | Unset = UNSET
    if not isinstance(state, Unset):
        json_state = state.value

    params["state"] = json_state

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/webhook-endpoints/{endpoint_id}/deliveries".format(
            endpoint_id=quote(str(endpoint_id), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> (
    V1WebhookEndpointsDeliveriesRetrieveResponse200
    | V1WebhookEndpointsDeliveriesRetrieveResponse400
    | V1WebhookEndpointsDeliveriesRetrieveResponse401
    | V1WebhookEndpointsDeliveriesRetrieveResponse403
    | V1WebhookEndpointsDeliveriesRetrieveResponse404
    | V1WebhookEndpointsDeliveriesRetrieveResponse406
    | None
):
    if response.status_code == 200:
        response_200 = V1WebhookEndpointsDeliveriesRetrieveResponse200.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = V1WebhookEndpointsDeliveriesRetrieveResponse400.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = V1WebhookEndpointsDeliveriesRetrieveResponse401.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = V1WebhookEndpointsDeliveriesRetrieveResponse403.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = V1WebhookEndpointsDeliveriesRetrieveResponse404.from_dict(response.json())

        return response_404

    if response.status_code == 406:
        response_406 = V1WebhookEndpointsDeliveriesRetrieveResponse406.from_dict(response.json())

        return response_406

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[
    V1WebhookEndpointsDeliveriesRetrieveResponse200
    | V1WebhookEndpointsDeliveriesRetrieveResponse400
    | V1WebhookEndpointsDeliveriesRetrieveResponse401
    | V1WebhookEndpointsDeliveriesRetrieveResponse403
    | V1WebhookEndpointsDeliveriesRetrieveResponse404
    | V1WebhookEndpointsDeliveriesRetrieveResponse406
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
    state: V1WebhookEndpointsDeliveriesRetrieveState | Unset = UNSET,
) -> Response[
    V1WebhookEndpointsDeliveriesRetrieveResponse200
    | V1WebhookEndpointsDeliveriesRetrieveResponse400
    | V1WebhookEndpointsDeliveriesRetrieveResponse401
    | V1WebhookEndpointsDeliveriesRetrieveResponse403
    | V1WebhookEndpointsDeliveriesRetrieveResponse404
    | V1WebhookEndpointsDeliveriesRetrieveResponse406
]:
    """
    Args:
        endpoint_id (UUID):
        state (V1WebhookEndpointsDeliveriesRetrieveState | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[V1WebhookEndpointsDeliveriesRetrieveResponse200 | V1WebhookEndpointsDeliveriesRetrieveResponse400 | V1WebhookEndpointsDeliveriesRetrieveResponse401 | V1WebhookEndpointsDeliveriesRetrieveResponse403 | V1WebhookEndpointsDeliveriesRetrieveResponse404 | V1WebhookEndpointsDeliveriesRetrieveResponse406]
    """

    kwargs = _get_kwargs(
        endpoint_id=endpoint_id,
        state=state,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    endpoint_id: UUID,
    *,
    client: AuthenticatedClient,
    state: V1WebhookEndpointsDeliveriesRetrieveState | Unset = UNSET,
) -> (
    V1WebhookEndpointsDeliveriesRetrieveResponse200
    | V1WebhookEndpointsDeliveriesRetrieveResponse400
    | V1WebhookEndpointsDeliveriesRetrieveResponse401
    | V1WebhookEndpointsDeliveriesRetrieveResponse403
    | V1WebhookEndpointsDeliveriesRetrieveResponse404
    | V1WebhookEndpointsDeliveriesRetrieveResponse406
    | None
):
    """
    Args:
        endpoint_id (UUID):
        state (V1WebhookEndpointsDeliveriesRetrieveState | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        V1WebhookEndpointsDeliveriesRetrieveResponse200 | V1WebhookEndpointsDeliveriesRetrieveResponse400 | V1WebhookEndpointsDeliveriesRetrieveResponse401 | V1WebhookEndpointsDeliveriesRetrieveResponse403 | V1WebhookEndpointsDeliveriesRetrieveResponse404 | V1WebhookEndpointsDeliveriesRetrieveResponse406
    """

    return sync_detailed(
        endpoint_id=endpoint_id,
        client=client,
        state=state,
    ).parsed


async def asyncio_detailed(
    endpoint_id: UUID,
    *,
    client: AuthenticatedClient,
    state: V1WebhookEndpointsDeliveriesRetrieveState | Unset = UNSET,
) -> Response[
    V1WebhookEndpointsDeliveriesRetrieveResponse200
    | V1WebhookEndpointsDeliveriesRetrieveResponse400
    | V1WebhookEndpointsDeliveriesRetrieveResponse401
    | V1WebhookEndpointsDeliveriesRetrieveResponse403
    | V1WebhookEndpointsDeliveriesRetrieveResponse404
    | V1WebhookEndpointsDeliveriesRetrieveResponse406
]:
    """
    Args:
        endpoint_id (UUID):
        state (V1WebhookEndpointsDeliveriesRetrieveState | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[V1WebhookEndpointsDeliveriesRetrieveResponse200 | V1WebhookEndpointsDeliveriesRetrieveResponse400 | V1WebhookEndpointsDeliveriesRetrieveResponse401 | V1WebhookEndpointsDeliveriesRetrieveResponse403 | V1WebhookEndpointsDeliveriesRetrieveResponse404 | V1WebhookEndpointsDeliveriesRetrieveResponse406]
    """

    kwargs = _get_kwargs(
        endpoint_id=endpoint_id,
        state=state,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    endpoint_id: UUID,
    *,
    client: AuthenticatedClient,
    state: V1WebhookEndpointsDeliveriesRetrieveState | Unset = UNSET,
) -> (
    V1WebhookEndpointsDeliveriesRetrieveResponse200
    | V1WebhookEndpointsDeliveriesRetrieveResponse400
    | V1WebhookEndpointsDeliveriesRetrieveResponse401
    | V1WebhookEndpointsDeliveriesRetrieveResponse403
    | V1WebhookEndpointsDeliveriesRetrieveResponse404
    | V1WebhookEndpointsDeliveriesRetrieveResponse406
    | None
):
    """
    Args:
        endpoint_id (UUID):
        state (V1WebhookEndpointsDeliveriesRetrieveState | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        V1WebhookEndpointsDeliveriesRetrieveResponse200 | V1WebhookEndpointsDeliveriesRetrieveResponse400 | V1WebhookEndpointsDeliveriesRetrieveResponse401 | V1WebhookEndpointsDeliveriesRetrieveResponse403 | V1WebhookEndpointsDeliveriesRetrieveResponse404 | V1WebhookEndpointsDeliveriesRetrieveResponse406
    """

    return (
        await asyncio_detailed(
            endpoint_id=endpoint_id,
            client=client,
            state=state,
        )
    ).parsed
