from http import HTTPStatus
from typing import Any
from urllib.parse import quote
from uuid import UUID

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.batch_detail import BatchDetail
from ...models.v1_extraction_batches_retrieve_response_400 import (
    V1ExtractionBatchesRetrieveResponse400,
)
from ...models.v1_extraction_batches_retrieve_response_401 import (
    V1ExtractionBatchesRetrieveResponse401,
)
from ...models.v1_extraction_batches_retrieve_response_403 import (
    V1ExtractionBatchesRetrieveResponse403,
)
from ...models.v1_extraction_batches_retrieve_response_404 import (
    V1ExtractionBatchesRetrieveResponse404,
)
from ...models.v1_extraction_batches_retrieve_response_406 import (
    V1ExtractionBatchesRetrieveResponse406,
)
from ...types import UNSET, Response, Unset


def _get_kwargs(
    batch_id: UUID,
    *,
    cursor: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["cursor"] = cursor

    params["page_size"] = page_size

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/extraction-batches/{batch_id}".format(
            batch_id=quote(str(batch_id), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> (
    BatchDetail
    | V1ExtractionBatchesRetrieveResponse400
    | V1ExtractionBatchesRetrieveResponse401
    | V1ExtractionBatchesRetrieveResponse403
    | V1ExtractionBatchesRetrieveResponse404
    | V1ExtractionBatchesRetrieveResponse406
    | None
):
    if response.status_code == 200:
        response_200 = BatchDetail.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = V1ExtractionBatchesRetrieveResponse400.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = V1ExtractionBatchesRetrieveResponse401.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = V1ExtractionBatchesRetrieveResponse403.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = V1ExtractionBatchesRetrieveResponse404.from_dict(response.json())

        return response_404

    if response.status_code == 406:
        response_406 = V1ExtractionBatchesRetrieveResponse406.from_dict(response.json())

        return response_406

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[
    BatchDetail
    | V1ExtractionBatchesRetrieveResponse400
    | V1ExtractionBatchesRetrieveResponse401
    | V1ExtractionBatchesRetrieveResponse403
    | V1ExtractionBatchesRetrieveResponse404
    | V1ExtractionBatchesRetrieveResponse406
]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    batch_id: UUID,
    *,
    client: AuthenticatedClient,
    cursor: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
) -> Response[
    BatchDetail
    | V1ExtractionBatchesRetrieveResponse400
    | V1ExtractionBatchesRetrieveResponse401
    | V1ExtractionBatchesRetrieveResponse403
    | V1ExtractionBatchesRetrieveResponse404
    | V1ExtractionBatchesRetrieveResponse406
]:
    """
    Args:
        batch_id (UUID):
        cursor (str | Unset):
        page_size (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[BatchDetail | V1ExtractionBatchesRetrieveResponse400 | V1ExtractionBatchesRetrieveResponse401 | V1ExtractionBatchesRetrieveResponse403 | V1ExtractionBatchesRetrieveResponse404 | V1ExtractionBatchesRetrieveResponse406]
    """

    kwargs = _get_kwargs(
        batch_id=batch_id,
        cursor=cursor,
        page_size=page_size,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    batch_id: UUID,
    *,
    client: AuthenticatedClient,
    cursor: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
) -> (
    BatchDetail
    | V1ExtractionBatchesRetrieveResponse400
    | V1ExtractionBatchesRetrieveResponse401
    | V1ExtractionBatchesRetrieveResponse403
    | V1ExtractionBatchesRetrieveResponse404
    | V1ExtractionBatchesRetrieveResponse406
    | None
):
    """
    Args:
        batch_id (UUID):
        cursor (str | Unset):
        page_size (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        BatchDetail | V1ExtractionBatchesRetrieveResponse400 | V1ExtractionBatchesRetrieveResponse401 | V1ExtractionBatchesRetrieveResponse403 | V1ExtractionBatchesRetrieveResponse404 | V1ExtractionBatchesRetrieveResponse406
    """

    return sync_detailed(
        batch_id=batch_id,
        client=client,
        cursor=cursor,
        page_size=page_size,
    ).parsed


async def asyncio_detailed(
    batch_id: UUID,
    *,
    client: AuthenticatedClient,
    cursor: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
) -> Response[
    BatchDetail
    | V1ExtractionBatchesRetrieveResponse400
    | V1ExtractionBatchesRetrieveResponse401
    | V1ExtractionBatchesRetrieveResponse403
    | V1ExtractionBatchesRetrieveResponse404
    | V1ExtractionBatchesRetrieveResponse406
]:
    """
    Args:
        batch_id (UUID):
        cursor (str | Unset):
        page_size (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[BatchDetail | V1ExtractionBatchesRetrieveResponse400 | V1ExtractionBatchesRetrieveResponse401 | V1ExtractionBatchesRetrieveResponse403 | V1ExtractionBatchesRetrieveResponse404 | V1ExtractionBatchesRetrieveResponse406]
    """

    kwargs = _get_kwargs(
        batch_id=batch_id,
        cursor=cursor,
        page_size=page_size,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    batch_id: UUID,
    *,
    client: AuthenticatedClient,
    cursor: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
) -> (
    BatchDetail
    | V1ExtractionBatchesRetrieveResponse400
    | V1ExtractionBatchesRetrieveResponse401
    | V1ExtractionBatchesRetrieveResponse403
    | V1ExtractionBatchesRetrieveResponse404
    | V1ExtractionBatchesRetrieveResponse406
    | None
):
    """
    Args:
        batch_id (UUID):
        cursor (str | Unset):
        page_size (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        BatchDetail | V1ExtractionBatchesRetrieveResponse400 | V1ExtractionBatchesRetrieveResponse401 | V1ExtractionBatchesRetrieveResponse403 | V1ExtractionBatchesRetrieveResponse404 | V1ExtractionBatchesRetrieveResponse406
    """

    return (
        await asyncio_detailed(
            batch_id=batch_id,
            client=client,
            cursor=cursor,
            page_size=page_size,
        )
    ).parsed
