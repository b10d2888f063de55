from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.v1_notification_tickets_create_response_201 import (
    V1NotificationTicketsCreateResponse201,
)
from ...models.v1_notification_tickets_create_response_401 import (
    V1NotificationTicketsCreateResponse401,
)
from ...models.v1_notification_tickets_create_response_403 import (
    V1NotificationTicketsCreateResponse403,
)
from ...models.v1_notification_tickets_create_response_406 import (
    V1NotificationTicketsCreateResponse406,
)
from ...types import Response


def _get_kwargs() -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/notification-tickets",
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> (
    V1NotificationTicketsCreateResponse201
    | V1NotificationTicketsCreateResponse401
    | V1NotificationTicketsCreateResponse403
    | V1NotificationTicketsCreateResponse406
    | None
):
    if response.status_code == 201:
        response_201 = V1NotificationTicketsCreateResponse201.from_dict(response.json())

        return response_201

    if response.status_code == 401:
        response_401 = V1NotificationTicketsCreateResponse401.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = V1NotificationTicketsCreateResponse403.from_dict(response.json())

        return response_403

    if response.status_code == 406:
        response_406 = V1NotificationTicketsCreateResponse406.from_dict(response.json())

        return response_406

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[
    V1NotificationTicketsCreateResponse201
    | V1NotificationTicketsCreateResponse401
    | V1NotificationTicketsCreateResponse403
    | V1NotificationTicketsCreateResponse406
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
    V1NotificationTicketsCreateResponse201
    | V1NotificationTicketsCreateResponse401
    | V1NotificationTicketsCreateResponse403
    | V1NotificationTicketsCreateResponse406
]:
    """``POST /api/v1/notification-tickets``: a single-use ticket to open ``/ws/jobs/`` with,
    sent as the subprotocol ``ticket.<ticket>`` next to ``jobs.v1`` (never in the URL).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[V1NotificationTicketsCreateResponse201 | V1NotificationTicketsCreateResponse401 | V1NotificationTicketsCreateResponse403 | V1NotificationTicketsCreateResponse406]
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
    V1NotificationTicketsCreateResponse201
    | V1NotificationTicketsCreateResponse401
    | V1NotificationTicketsCreateResponse403
    | V1NotificationTicketsCreateResponse406
    | None
):
    """``POST /api/v1/notification-tickets``: a single-use ticket to open ``/ws/jobs/`` with,
    sent as the subprotocol ``ticket.<ticket>`` next to ``jobs.v1`` (never in the URL).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        V1NotificationTicketsCreateResponse201 | V1NotificationTicketsCreateResponse401 | V1NotificationTicketsCreateResponse403 | V1NotificationTicketsCreateResponse406
    """

    return sync_detailed(
        client=client,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
) -> Response[
    V1NotificationTicketsCreateResponse201
    | V1NotificationTicketsCreateResponse401
    | V1NotificationTicketsCreateResponse403
    | V1NotificationTicketsCreateResponse406
]:
    """``POST /api/v1/notification-tickets``: a single-use ticket to open ``/ws/jobs/`` with,
    sent as the subprotocol ``ticket.<ticket>`` next to ``jobs.v1`` (never in the URL).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[V1NotificationTicketsCreateResponse201 | V1NotificationTicketsCreateResponse401 | V1NotificationTicketsCreateResponse403 | V1NotificationTicketsCreateResponse406]
    """

    kwargs = _get_kwargs()

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
) -> (
    V1NotificationTicketsCreateResponse201
    | V1NotificationTicketsCreateResponse401
    | V1NotificationTicketsCreateResponse403
    | V1NotificationTicketsCreateResponse406
    | None
):
    """``POST /api/v1/notification-tickets``: a single-use ticket to open ``/ws/jobs/`` with,
    sent as the subprotocol ``ticket.<ticket>`` next to ``jobs.v1`` (never in the URL).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        V1NotificationTicketsCreateResponse201 | V1NotificationTicketsCreateResponse401 | V1NotificationTicketsCreateResponse403 | V1NotificationTicketsCreateResponse406
    """

    return (
        await asyncio_detailed(
            client=client,
        )
    ).parsed
