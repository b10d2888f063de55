from http import HTTPStatus
from typing import Any
from urllib.parse import quote
from uuid import UUID

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.v1_operator_actions_retrieve_response_200 import (
    V1OperatorActionsRetrieveResponse200,
)
from ...models.v1_operator_actions_retrieve_response_401 import (
    V1OperatorActionsRetrieveResponse401,
)
from ...models.v1_operator_actions_retrieve_response_403 import (
    V1OperatorActionsRetrieveResponse403,
)
from ...models.v1_operator_actions_retrieve_response_404 import (
    V1OperatorActionsRetrieveResponse404,
)
from ...models.v1_operator_actions_retrieve_response_406 import (
    V1OperatorActionsRetrieveResponse406,
)
from ...types import Response


def _get_kwargs(
    action_id: UUID,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/operator-actions/{action_id}".format(
            action_id=quote(str(action_id), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> (
    V1OperatorActionsRetrieveResponse200
    | V1OperatorActionsRetrieveResponse401
    | V1OperatorActionsRetrieveResponse403
    | V1OperatorActionsRetrieveResponse404
    | V1OperatorActionsRetrieveResponse406
    | None
):
    if response.status_code == 200:
        response_200 = V1OperatorActionsRetrieveResponse200.from_dict(response.json())

        return response_200

    if response.status_code == 401:
        response_401 = V1OperatorActionsRetrieveResponse401.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = V1OperatorActionsRetrieveResponse403.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = V1OperatorActionsRetrieveResponse404.from_dict(response.json())

        return response_404

    if response.status_code == 406:
        response_406 = V1OperatorActionsRetrieveResponse406.from_dict(response.json())

        return response_406

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[
    V1OperatorActionsRetrieveResponse200
    | V1OperatorActionsRetrieveResponse401
    | V1OperatorActionsRetrieveResponse403
    | V1OperatorActionsRetrieveResponse404
    | V1OperatorActionsRetrieveResponse406
]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    action_id: UUID,
    *,
    client: AuthenticatedClient,
) -> Response[
    V1OperatorActionsRetrieveResponse200
    | V1OperatorActionsRetrieveResponse401
    | V1OperatorActionsRetrieveResponse403
    | V1OperatorActionsRetrieveResponse404
    | V1OperatorActionsRetrieveResponse406
]:
    """
    Args:
        action_id (UUID):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[V1OperatorActionsRetrieveResponse200 | V1OperatorActionsRetrieveResponse401 | V1OperatorActionsRetrieveResponse403 | V1OperatorActionsRetrieveResponse404 | V1OperatorActionsRetrieveResponse406]
    """

    kwargs = _get_kwargs(
        action_id=action_id,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    action_id: UUID,
    *,
    client: AuthenticatedClient,
) -> (
    V1OperatorActionsRetrieveResponse200
    | V1OperatorActionsRetrieveResponse401
    | V1OperatorActionsRetrieveResponse403
    | V1OperatorActionsRetrieveResponse404
    | V1OperatorActionsRetrieveResponse406
    | None
):
    """
    Args:
        action_id (UUID):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        V1OperatorActionsRetrieveResponse200 | V1OperatorActionsRetrieveResponse401 | V1OperatorActionsRetrieveResponse403 | V1OperatorActionsRetrieveResponse404 | V1OperatorActionsRetrieveResponse406
    """

    return sync_detailed(
        action_id=action_id,
        client=client,
    ).parsed


async def asyncio_detailed(
    action_id: UUID,
    *,
    client: AuthenticatedClient,
) -> Response[
    V1OperatorActionsRetrieveResponse200
    | V1OperatorActionsRetrieveResponse401
    | V1OperatorActionsRetrieveResponse403
    | V1OperatorActionsRetrieveResponse404
    | V1OperatorActionsRetrieveResponse406
]:
    """
    Args:
        action_id (UUID):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[V1OperatorActionsRetrieveResponse200 | V1OperatorActionsRetrieveResponse401 | V1OperatorActionsRetrieveResponse403 | V1OperatorActionsRetrieveResponse404 | V1OperatorActionsRetrieveResponse406]
    """

    kwargs = _get_kwargs(
        action_id=action_id,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    action_id: UUID,
    *,
    client: AuthenticatedClient,
) -> (
    V1OperatorActionsRetrieveResponse200
    | V1OperatorActionsRetrieveResponse401
    | V1OperatorActionsRetrieveResponse403
    | V1OperatorActionsRetrieveResponse404
    | V1OperatorActionsRetrieveResponse406
    | None
):
    """
    Args:
        action_id (UUID):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        V1OperatorActionsRetrieveResponse200 | V1OperatorActionsRetrieveResponse401 | V1OperatorActionsRetrieveResponse403 | V1OperatorActionsRetrieveResponse404 | V1OperatorActionsRetrieveResponse406
    """

    return (
        await asyncio_detailed(
            action_id=action_id,
            client=client,
        )
    ).parsed
