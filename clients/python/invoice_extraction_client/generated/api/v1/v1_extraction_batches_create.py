from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.batch_accepted import BatchAccepted
from ...models.batch_create_request import BatchCreateRequest
from ...models.v1_extraction_batches_create_response_400 import (
    V1ExtractionBatchesCreateResponse400,
)
from ...models.v1_extraction_batches_create_response_401 import (
    V1ExtractionBatchesCreateResponse401,
)
from ...models.v1_extraction_batches_create_response_403 import (
    V1ExtractionBatchesCreateResponse403,
)
from ...models.v1_extraction_batches_create_response_406 import (
    V1ExtractionBatchesCreateResponse406,
)
from ...models.v1_extraction_batches_create_response_409 import (
    V1ExtractionBatchesCreateResponse409,
)
from ...models.v1_extraction_batches_create_response_413 import (
    V1ExtractionBatchesCreateResponse413,
)
from ...models.v1_extraction_batches_create_response_415 import (
    V1ExtractionBatchesCreateResponse415,
)
from ...models.v1_extraction_batches_create_response_422 import (
    V1ExtractionBatchesCreateResponse422,
)
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    body: BatchCreateRequest | Unset = UNSET,
    idempotency_key: str,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    headers["Idempotency-Key"] = idempotency_key

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/extraction-batches",
    }

    if not isinstance(body, Unset):
        _kwargs["files"] = body.to_multipart()

    headers["Content-Type"] = "multipart/form-data; boundary=+++"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> (
    BatchAccepted
    | V1ExtractionBatchesCreateResponse400
    | V1ExtractionBatchesCreateResponse401
    | V1ExtractionBatchesCreateResponse403
    | V1ExtractionBatchesCreateResponse406
    | V1ExtractionBatchesCreateResponse409
    | V1ExtractionBatchesCreateResponse413
    | V1ExtractionBatchesCreateResponse415
    | V1ExtractionBatchesCreateResponse422
    | None
):
    if response.status_code == 202:
        response_202 = BatchAccepted.from_dict(response.json())

        return response_202

    if response.status_code == 400:
        response_400 = V1ExtractionBatchesCreateResponse400.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = V1ExtractionBatchesCreateResponse401.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = V1ExtractionBatchesCreateResponse403.from_dict(response.json())

        return response_403

    if response.status_code == 406:
        response_406 = V1ExtractionBatchesCreateResponse406.from_dict(response.json())

        return response_406

    if response.status_code == 409:
        response_409 = V1ExtractionBatchesCreateResponse409.from_dict(response.json())

        return response_409

    if response.status_code == 413:
        response_413 = V1ExtractionBatchesCreateResponse413.from_dict(response.json())

        return response_413

    if response.status_code == 415:
        response_415 = V1ExtractionBatchesCreateResponse415.from_dict(response.json())

        return response_415

    if response.status_code == 422:
        response_422 = V1ExtractionBatchesCreateResponse422.from_dict(response.json())

        return response_422

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[
    BatchAccepted
    | V1ExtractionBatchesCreateResponse400
    | V1ExtractionBatchesCreateResponse401
    | V1ExtractionBatchesCreateResponse403
    | V1ExtractionBatchesCreateResponse406
    | V1ExtractionBatchesCreateResponse409
    | V1ExtractionBatchesCreateResponse413
    | V1ExtractionBatchesCreateResponse415
    | V1ExtractionBatchesCreateResponse422
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
    body: BatchCreateRequest | Unset = UNSET,
    idempotency_key: str,
) -> Response[
    BatchAccepted
    | V1ExtractionBatchesCreateResponse400
    | V1ExtractionBatchesCreateResponse401
    | V1ExtractionBatchesCreateResponse403
    | V1ExtractionBatchesCreateResponse406
    | V1ExtractionBatchesCreateResponse409
    | V1ExtractionBatchesCreateResponse413
    | V1ExtractionBatchesCreateResponse415
    | V1ExtractionBatchesCreateResponse422
]:
    """
    Args:
        idempotency_key (str):
        body (BatchCreateRequest | Unset): A batch: the documents as `files` parts or one zip
            `archive`, the schema and the options
            of every job. Rejects parts it does not know.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[BatchAccepted | V1ExtractionBatchesCreateResponse400 | V1ExtractionBatchesCreateResponse401 | V1ExtractionBatchesCreateResponse403 | V1ExtractionBatchesCreateResponse406 | V1ExtractionBatchesCreateResponse409 | V1ExtractionBatchesCreateResponse413 | V1ExtractionBatchesCreateResponse415 | V1ExtractionBatchesCreateResponse422]
    """

    kwargs = _get_kwargs(
        body=body,
        idempotency_key=idempotency_key,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    body: BatchCreateRequest | Unset = UNSET,
    idempotency_key: str,
) -> (
    BatchAccepted
    | V1ExtractionBatchesCreateResponse400
    | V1ExtractionBatchesCreateResponse401
    | V1ExtractionBatchesCreateResponse403
    | V1ExtractionBatchesCreateResponse406
    | V1ExtractionBatchesCreateResponse409
    | V1ExtractionBatchesCreateResponse413
    | V1ExtractionBatchesCreateResponse415
    | V1ExtractionBatchesCreateResponse422
    | None
):
    """
    Args:
        idempotency_key (str):
        body (BatchCreateRequest | Unset): A batch: the documents as `files` parts or one zip
            `archive`, the schema and the options
            of every job. Rejects parts it does not know.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        BatchAccepted | V1ExtractionBatchesCreateResponse400 | V1ExtractionBatchesCreateResponse401 | V1ExtractionBatchesCreateResponse403 | V1ExtractionBatchesCreateResponse406 | V1ExtractionBatchesCreateResponse409 | V1ExtractionBatchesCreateResponse413 | V1ExtractionBatchesCreateResponse415 | V1ExtractionBatchesCreateResponse422
    """

    return sync_detailed(
        client=client,
        body=body,
        idempotency_key=idempotency_key,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: BatchCreateRequest | Unset = UNSET,
    idempotency_key: str,
) -> Response[
    BatchAccepted
    | V1ExtractionBatchesCreateResponse400
    | V1ExtractionBatchesCreateResponse401
    | V1ExtractionBatchesCreateResponse403
    | V1ExtractionBatchesCreateResponse406
    | V1ExtractionBatchesCreateResponse409
    | V1ExtractionBatchesCreateResponse413
    | V1ExtractionBatchesCreateResponse415
    | V1ExtractionBatchesCreateResponse422
]:
    """
    Args:
        idempotency_key (str):
        body (BatchCreateRequest | Unset): A batch: the documents as `files` parts or one zip
            `archive`, the schema and the options
            of every job. Rejects parts it does not know.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[BatchAccepted | V1ExtractionBatchesCreateResponse400 | V1ExtractionBatchesCreateResponse401 | V1ExtractionBatchesCreateResponse403 | V1ExtractionBatchesCreateResponse406 | V1ExtractionBatchesCreateResponse409 | V1ExtractionBatchesCreateResponse413 | V1ExtractionBatchesCreateResponse415 | V1ExtractionBatchesCreateResponse422]
    """

    kwargs = _get_kwargs(
        body=body,
        idempotency_key=idempotency_key,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: BatchCreateRequest | Unset = UNSET,
    idempotency_key: str,
) -> (
    BatchAccepted
    | V1ExtractionBatchesCreateResponse400
    | V1ExtractionBatchesCreateResponse401
    | V1ExtractionBatchesCreateResponse403
    | V1ExtractionBatchesCreateResponse406
    | V1ExtractionBatchesCreateResponse409
    | V1ExtractionBatchesCreateResponse413
    | V1ExtractionBatchesCreateResponse415
    | V1ExtractionBatchesCreateResponse422
    | None
):
    """
    Args:
        idempotency_key (str):
        body (BatchCreateRequest | Unset): A batch: the documents as `files` parts or one zip
            `archive`, the schema and the options
            of every job. Rejects parts it does not know.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        BatchAccepted | V1ExtractionBatchesCreateResponse400 | V1ExtractionBatchesCreateResponse401 | V1ExtractionBatchesCreateResponse403 | V1ExtractionBatchesCreateResponse406 | V1ExtractionBatchesCreateResponse409 | V1ExtractionBatchesCreateResponse413 | V1ExtractionBatchesCreateResponse415 | V1ExtractionBatchesCreateResponse422
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
            idempotency_key=idempotency_key,
        )
    ).parsed
