from http import HTTPStatus
from typing import Any
from urllib.parse import quote
from uuid import UUID

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.v1_documents_retrieve_response_200 import V1DocumentsRetrieveResponse200
from ...models.v1_documents_retrieve_response_401 import V1DocumentsRetrieveResponse401
from ...models.v1_documents_retrieve_response_403 import V1DocumentsRetrieveResponse403
from ...models.v1_documents_retrieve_response_404 import V1DocumentsRetrieveResponse404
from ...models.v1_documents_retrieve_response_406 import V1DocumentsRetrieveResponse406
from ...types import Response


def _get_kwargs(
    document_id: UUID,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/documents/{document_id}".format(
            document_id=quote(str(document_id), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> (
    V1DocumentsRetrieveResponse200
    | V1DocumentsRetrieveResponse401
    | V1DocumentsRetrieveResponse403
    | V1DocumentsRetrieveResponse404
    | V1DocumentsRetrieveResponse406
    | None
):
    if response.status_code == 200:
        response_200 = V1DocumentsRetrieveResponse200.from_dict(response.json())

        return response_200

    if response.status_code == 401:
        response_401 = V1DocumentsRetrieveResponse401.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = V1DocumentsRetrieveResponse403.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = V1DocumentsRetrieveResponse404.from_dict(response.json())

        return response_404

    if response.status_code == 406:
        response_406 = V1DocumentsRetrieveResponse406.from_dict(response.json())

        return response_406

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[
    V1DocumentsRetrieveResponse200
    | V1DocumentsRetrieveResponse401
    | V1DocumentsRetrieveResponse403
    | V1DocumentsRetrieveResponse404
    | V1DocumentsRetrieveResponse406
]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    document_id: UUID,
    *,
    client: AuthenticatedClient,
) -> Response[
    V1DocumentsRetrieveResponse200
    | V1DocumentsRetrieveResponse401
    | V1DocumentsRetrieveResponse403
    | V1DocumentsRetrieveResponse404
    | V1DocumentsRetrieveResponse406
]:
    """
    Args:
        document_id (UUID):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[V1DocumentsRetrieveResponse200 | V1DocumentsRetrieveResponse401 | V1DocumentsRetrieveResponse403 | V1DocumentsRetrieveResponse404 | V1DocumentsRetrieveResponse406]
    """

    kwargs = _get_kwargs(
        document_id=document_id,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    document_id: UUID,
    *,
    client: AuthenticatedClient,
) -> (
    V1DocumentsRetrieveResponse200
    | V1DocumentsRetrieveResponse401
    | V1DocumentsRetrieveResponse403
    | V1DocumentsRetrieveResponse404
    | V1DocumentsRetrieveResponse406
    | None
):
    """
    Args:
        document_id (UUID):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        V1DocumentsRetrieveResponse200 | V1DocumentsRetrieveResponse401 | V1DocumentsRetrieveResponse403 | V1DocumentsRetrieveResponse404 | V1DocumentsRetrieveResponse406
    """

    return sync_detailed(
        document_id=document_id,
        client=client,
    ).parsed


async def asyncio_detailed(
    document_id: UUID,
    *,
    client: AuthenticatedClient,
) -> Response[
    V1DocumentsRetrieveResponse200
    | V1DocumentsRetrieveResponse401
    | V1DocumentsRetrieveResponse403
    | V1DocumentsRetrieveResponse404
    | V1DocumentsRetrieveResponse406
]:
    """
    Args:
        document_id (UUID):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[V1DocumentsRetrieveResponse200 | V1DocumentsRetrieveResponse401 | V1DocumentsRetrieveResponse403 | V1DocumentsRetrieveResponse404 | V1DocumentsRetrieveResponse406]
    """

    kwargs = _get_kwargs(
        document_id=document_id,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    document_id: UUID,
    *,
    client: AuthenticatedClient,
) -> (
    V1DocumentsRetrieveResponse200
    | V1DocumentsRetrieveResponse401
    | V1DocumentsRetrieveResponse403
    | V1DocumentsRetrieveResponse404
    | V1DocumentsRetrieveResponse406
    | None
):
    """
    Args:
        document_id (UUID):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        V1DocumentsRetrieveResponse200 | V1DocumentsRetrieveResponse401 | V1DocumentsRetrieveResponse403 | V1DocumentsRetrieveResponse404 | V1DocumentsRetrieveResponse406
    """

    return (
        await asyncio_detailed(
            document_id=document_id,
            client=client,
        )
    ).parsed
