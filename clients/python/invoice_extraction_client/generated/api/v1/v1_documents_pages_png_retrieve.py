from http import HTTPStatus
from io import BytesIO
from typing import Any, cast
from urllib.parse import quote
from uuid import UUID

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.v1_documents_pages_png_retrieve_response_400 import (
    V1DocumentsPagesPngRetrieveResponse400,
)
from ...models.v1_documents_pages_png_retrieve_response_401 import (
    V1DocumentsPagesPngRetrieveResponse401,
)
from ...models.v1_documents_pages_png_retrieve_response_403 import (
    V1DocumentsPagesPngRetrieveResponse403,
)
from ...models.v1_documents_pages_png_retrieve_response_404 import (
    V1DocumentsPagesPngRetrieveResponse404,
)
from ...models.v1_documents_pages_png_retrieve_response_406 import (
    V1DocumentsPagesPngRetrieveResponse406,
)
from ...types import UNSET, File, Response, Unset


def _get_kwargs(
    document_id: UUID,
    page: int,
    *,
    dpi: int | Unset = 100,
    if_none_match: str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(if_none_match, Unset):
        headers["If-None-Match"] = if_none_match

    params: dict[str, Any] = {}

    params["dpi"] = dpi

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/documents/{document_id}/pages/{page}.png".format(
            document_id=quote(str(document_id), safe=""),
            page=quote(str(page), safe=""),
        ),
        "params": params,
    }

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> (
    Any
    | File
    | V1DocumentsPagesPngRetrieveResponse400
    | V1DocumentsPagesPngRetrieveResponse401
    | V1DocumentsPagesPngRetrieveResponse403
    | V1DocumentsPagesPngRetrieveResponse404
    | V1DocumentsPagesPngRetrieveResponse406
    | None
):
    if response.status_code == 200:
        response_200 = File(payload=BytesIO(response.content))

        return response_200

    if response.status_code == 304:
        response_304 = cast(Any, None)
        return response_304

    if response.status_code == 400:
        response_400 = V1DocumentsPagesPngRetrieveResponse400.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = V1DocumentsPagesPngRetrieveResponse401.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = V1DocumentsPagesPngRetrieveResponse403.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = V1DocumentsPagesPngRetrieveResponse404.from_dict(response.json())

        return response_404

    if response.status_code == 406:
        response_406 = V1DocumentsPagesPngRetrieveResponse406.from_dict(response.json())

        return response_406

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[
    Any
    | File
    | V1DocumentsPagesPngRetrieveResponse400
    | V1DocumentsPagesPngRetrieveResponse401
    | V1DocumentsPagesPngRetrieveResponse403
    | V1DocumentsPagesPngRetrieveResponse404
    | V1DocumentsPagesPngRetrieveResponse406
]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    document_id: UUID,
    page: int,
    *,
    client: AuthenticatedClient,
    dpi: int | Unset = 100,
    if_none_match: str | Unset = UNSET,
) -> Response[
    Any
    | File
    | V1DocumentsPagesPngRetrieveResponse400
    | V1DocumentsPagesPngRetrieveResponse401
    | V1DocumentsPagesPngRetrieveResponse403
    | V1DocumentsPagesPngRetrieveResponse404
    | V1DocumentsPagesPngRetrieveResponse406
]:
    """``GET /api/v1/documents/<id>/pages/<n>.png``: a page of the document as a PNG, what
    evidence boxes (fractions of the page) are drawn on.

    Args:
        document_id (UUID):
        page (int):
        dpi (int | Unset):  Default: 100.
        if_none_match (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | File | V1DocumentsPagesPngRetrieveResponse400 | V1DocumentsPagesPngRetrieveResponse401 | V1DocumentsPagesPngRetrieveResponse403 | V1DocumentsPagesPngRetrieveResponse404 | V1DocumentsPagesPngRetrieveResponse406]
    """

    kwargs = _get_kwargs(
        document_id=document_id,
        page=page,
        dpi=dpi,
        if_none_match=if_none_match,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    document_id: UUID,
    page: int,
    *,
    client: AuthenticatedClient,
    dpi: int | Unset = 100,
    if_none_match: str | Unset = UNSET,
) -> (
    Any
    | File
    | V1DocumentsPagesPngRetrieveResponse400
    | V1DocumentsPagesPngRetrieveResponse401
    | V1DocumentsPagesPngRetrieveResponse403
    | V1DocumentsPagesPngRetrieveResponse404
    | V1DocumentsPagesPngRetrieveResponse406
    | None
):
    """``GET /api/v1/documents/<id>/pages/<n>.png``: a page of the document as a PNG, what
    evidence boxes (fractions of the page) are drawn on.

    Args:
        document_id (UUID):
        page (int):
        dpi (int | Unset):  Default: 100.
        if_none_match (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | File | V1DocumentsPagesPngRetrieveResponse400 | V1DocumentsPagesPngRetrieveResponse401 | V1DocumentsPagesPngRetrieveResponse403 | V1DocumentsPagesPngRetrieveResponse404 | V1DocumentsPagesPngRetrieveResponse406
    """

    return sync_detailed(
        document_id=document_id,
        page=page,
        client=client,
        dpi=dpi,
        if_none_match=if_none_match,
    ).parsed


async def asyncio_detailed(
    document_id: UUID,
    page: int,
    *,
    client: AuthenticatedClient,
    dpi: int | Unset = 100,
    if_none_match: str | Unset = UNSET,
) -> Response[
    Any
    | File
    | V1DocumentsPagesPngRetrieveResponse400
    | V1DocumentsPagesPngRetrieveResponse401
    | V1DocumentsPagesPngRetrieveResponse403
    | V1DocumentsPagesPngRetrieveResponse404
    | V1DocumentsPagesPngRetrieveResponse406
]:
    """``GET /api/v1/documents/<id>/pages/<n>.png``: a page of the document as a PNG, what
    evidence boxes (fractions of the page) are drawn on.

    Args:
        document_id (UUID):
        page (int):
        dpi (int | Unset):  Default: 100.
        if_none_match (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | File | V1DocumentsPagesPngRetrieveResponse400 | V1DocumentsPagesPngRetrieveResponse401 | V1DocumentsPagesPngRetrieveResponse403 | V1DocumentsPagesPngRetrieveResponse404 | V1DocumentsPagesPngRetrieveResponse406]
    """

    kwargs = _get_kwargs(
        document_id=document_id,
        page=page,
        dpi=dpi,
        if_none_match=if_none_match,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    document_id: UUID,
    page: int,
    *,
    client: AuthenticatedClient,
    dpi: int | Unset = 100,
    if_none_match: str | Unset = UNSET,
) -> (
    Any
    | File
    | V1DocumentsPagesPngRetrieveResponse400
    | V1DocumentsPagesPngRetrieveResponse401
    | V1DocumentsPagesPngRetrieveResponse403
    | V1DocumentsPagesPngRetrieveResponse404
    | V1DocumentsPagesPngRetrieveResponse406
    | None
):
    """``GET /api/v1/documents/<id>/pages/<n>.png``: a page of the document as a PNG, what
    evidence boxes (fractions of the page) are drawn on.

    Args:
        document_id (UUID):
        page (int):
        dpi (int | Unset):  Default: 100.
        if_none_match (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | File | V1DocumentsPagesPngRetrieveResponse400 | V1DocumentsPagesPngRetrieveResponse401 | V1DocumentsPagesPngRetrieveResponse403 | V1DocumentsPagesPngRetrieveResponse404 | V1DocumentsPagesPngRetrieveResponse406
    """

    return (
        await asyncio_detailed(
            document_id=document_id,
            page=page,
            client=client,
            dpi=dpi,
            if_none_match=if_none_match,
        )
    ).parsed
