from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.document import Document
from ...models.document_upload_request import DocumentUploadRequest
from ...models.v1_documents_create_response_400 import V1DocumentsCreateResponse400
from ...models.v1_documents_create_response_401 import V1DocumentsCreateResponse401
from ...models.v1_documents_create_response_403 import V1DocumentsCreateResponse403
from ...models.v1_documents_create_response_406 import V1DocumentsCreateResponse406
from ...models.v1_documents_create_response_413 import V1DocumentsCreateResponse413
from ...models.v1_documents_create_response_415 import V1DocumentsCreateResponse415
from ...models.v1_documents_create_response_422 import V1DocumentsCreateResponse422
from ...types import Response


def _get_kwargs(
    *,
    body: DocumentUploadRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/documents",
    }

    _kwargs["files"] = body.to_multipart()

    headers["Content-Type"] = "multipart/form-data; boundary=+++"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> (
    Document
    | V1DocumentsCreateResponse400
    | V1DocumentsCreateResponse401
    | V1DocumentsCreateResponse403
    | V1DocumentsCreateResponse406
    | V1DocumentsCreateResponse413
    | V1DocumentsCreateResponse415
    | V1DocumentsCreateResponse422
    | None
):
    if response.status_code == 201:
        response_201 = Document.from_dict(response.json())

        return response_201

    if response.status_code == 400:
        response_400 = V1DocumentsCreateResponse400.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = V1DocumentsCreateResponse401.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = V1DocumentsCreateResponse403.from_dict(response.json())

        return response_403

    if response.status_code == 406:
        response_406 = V1DocumentsCreateResponse406.from_dict(response.json())

        return response_406

    if response.status_code == 413:
        response_413 = V1DocumentsCreateResponse413.from_dict(response.json())

        return response_413

    if response.status_code == 415:
        response_415 = V1DocumentsCreateResponse415.from_dict(response.json())

        return response_415

    if response.status_code == 422:
        response_422 = V1DocumentsCreateResponse422.from_dict(response.json())

        return response_422

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[
    Document
    | V1DocumentsCreateResponse400
    | V1DocumentsCreateResponse401
    | V1DocumentsCreateResponse403
    | V1DocumentsCreateResponse406
    | V1DocumentsCreateResponse413
    | V1DocumentsCreateResponse415
    | V1DocumentsCreateResponse422
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
    body: DocumentUploadRequest,
) -> Response[
    Document
    | V1DocumentsCreateResponse400
    | V1DocumentsCreateResponse401
    | V1DocumentsCreateResponse403
    | V1DocumentsCreateResponse406
    | V1DocumentsCreateResponse413
    | V1DocumentsCreateResponse415
    | V1DocumentsCreateResponse422
]:
    """
    Args:
        body (DocumentUploadRequest): Rejects members it does not know, so a typo in a field name
            is an error, not a default.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Document | V1DocumentsCreateResponse400 | V1DocumentsCreateResponse401 | V1DocumentsCreateResponse403 | V1DocumentsCreateResponse406 | V1DocumentsCreateResponse413 | V1DocumentsCreateResponse415 | V1DocumentsCreateResponse422]
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
    body: DocumentUploadRequest,
) -> (
    Document
    | V1DocumentsCreateResponse400
    | V1DocumentsCreateResponse401
    | V1DocumentsCreateResponse403
    | V1DocumentsCreateResponse406
    | V1DocumentsCreateResponse413
    | V1DocumentsCreateResponse415
    | V1DocumentsCreateResponse422
    | None
):
    """
    Args:
        body (DocumentUploadRequest): Rejects members it does not know, so a typo in a field name
            is an error, not a default.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Document | V1DocumentsCreateResponse400 | V1DocumentsCreateResponse401 | V1DocumentsCreateResponse403 | V1DocumentsCreateResponse406 | V1DocumentsCreateResponse413 | V1DocumentsCreateResponse415 | V1DocumentsCreateResponse422
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: DocumentUploadRequest,
) -> Response[
    Document
    | V1DocumentsCreateResponse400
    | V1DocumentsCreateResponse401
    | V1DocumentsCreateResponse403
    | V1DocumentsCreateResponse406
    | V1DocumentsCreateResponse413
    | V1DocumentsCreateResponse415
    | V1DocumentsCreateResponse422
]:
    """
    Args:
        body (DocumentUploadRequest): Rejects members it does not know, so a typo in a field name
            is an error, not a default.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Document | V1DocumentsCreateResponse400 | V1DocumentsCreateResponse401 | V1DocumentsCreateResponse403 | V1DocumentsCreateResponse406 | V1DocumentsCreateResponse413 | V1DocumentsCreateResponse415 | V1DocumentsCreateResponse422]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: DocumentUploadRequest,
) -> (
    Document
    | V1DocumentsCreateResponse400
    | V1DocumentsCreateResponse401
    | V1DocumentsCreateResponse403
    | V1DocumentsCreateResponse406
    | V1DocumentsCreateResponse413
    | V1DocumentsCreateResponse415
    | V1DocumentsCreateResponse422
    | None
):
    """
    Args:
        body (DocumentUploadRequest): Rejects members it does not know, so a typo in a field name
            is an error, not a default.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Document | V1DocumentsCreateResponse400 | V1DocumentsCreateResponse401 | V1DocumentsCreateResponse403 | V1DocumentsCreateResponse406 | V1DocumentsCreateResponse413 | V1DocumentsCreateResponse415 | V1DocumentsCreateResponse422
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
