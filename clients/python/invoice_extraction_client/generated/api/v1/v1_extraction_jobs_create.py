from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.job_create_request import JobCreateRequest
from ...models.v1_extraction_jobs_create_response_202 import (
    V1ExtractionJobsCreateResponse202,
)
from ...models.v1_extraction_jobs_create_response_400 import (
    V1ExtractionJobsCreateResponse400,
)
from ...models.v1_extraction_jobs_create_response_401 import (
    V1ExtractionJobsCreateResponse401,
)
from ...models.v1_extraction_jobs_create_response_403 import (
    V1ExtractionJobsCreateResponse403,
)
from ...models.v1_extraction_jobs_create_response_406 import (
    V1ExtractionJobsCreateResponse406,
)
from ...models.v1_extraction_jobs_create_response_409 import (
    V1ExtractionJobsCreateResponse409,
)
from ...models.v1_extraction_jobs_create_response_413 import (
    V1ExtractionJobsCreateResponse413,
)
from ...models.v1_extraction_jobs_create_response_415 import (
    V1ExtractionJobsCreateResponse415,
)
from ...models.v1_extraction_jobs_create_response_422 import (
    V1ExtractionJobsCreateResponse422,
)
from ...models.v1_extraction_jobs_create_response_429 import (
    V1ExtractionJobsCreateResponse429,
)
from ...models.v1_extraction_jobs_create_response_503 import (
    V1ExtractionJobsCreateResponse503,
)
from ...types import Response


def _get_kwargs(
    *,
    body: JobCreateRequest,
    idempotency_key: str,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    headers["Idempotency-Key"] = idempotency_key

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/extraction-jobs",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> (
    V1ExtractionJobsCreateResponse202
    | V1ExtractionJobsCreateResponse400
    | V1ExtractionJobsCreateResponse401
    | V1ExtractionJobsCreateResponse403
    | V1ExtractionJobsCreateResponse406
    | V1ExtractionJobsCreateResponse409
    | V1ExtractionJobsCreateResponse413
    | V1ExtractionJobsCreateResponse415
    | V1ExtractionJobsCreateResponse422
    | V1ExtractionJobsCreateResponse429
    | V1ExtractionJobsCreateResponse503
    | None
):
    if response.status_code == 202:
        response_202 = V1ExtractionJobsCreateResponse202.from_dict(response.json())

        return response_202

    if response.status_code == 400:
        response_400 = V1ExtractionJobsCreateResponse400.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = V1ExtractionJobsCreateResponse401.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = V1ExtractionJobsCreateResponse403.from_dict(response.json())

        return response_403

    if response.status_code == 406:
        response_406 = V1ExtractionJobsCreateResponse406.from_dict(response.json())

        return response_406

    if response.status_code == 409:
        response_409 = V1ExtractionJobsCreateResponse409.from_dict(response.json())

        return response_409

    if response.status_code == 413:
        response_413 = V1ExtractionJobsCreateResponse413.from_dict(response.json())

        return response_413

    if response.status_code == 415:
        response_415 = V1ExtractionJobsCreateResponse415.from_dict(response.json())

        return response_415

    if response.status_code == 422:
        response_422 = V1ExtractionJobsCreateResponse422.from_dict(response.json())

        return response_422

    if response.status_code == 429:
        response_429 = V1ExtractionJobsCreateResponse429.from_dict(response.json())

        return response_429

    if response.status_code == 503:
        response_503 = V1ExtractionJobsCreateResponse503.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[
    V1ExtractionJobsCreateResponse202
    | V1ExtractionJobsCreateResponse400
    | V1ExtractionJobsCreateResponse401
    | V1ExtractionJobsCreateResponse403
    | V1ExtractionJobsCreateResponse406
    | V1ExtractionJobsCreateResponse409
    | V1ExtractionJobsCreateResponse413
    | V1ExtractionJobsCreateResponse415
    | V1ExtractionJobsCreateResponse422
    | V1ExtractionJobsCreateResponse429
    | V1ExtractionJobsCreateResponse503
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
    body: JobCreateRequest,
    idempotency_key: str,
) -> Response[
    V1ExtractionJobsCreateResponse202
    | V1ExtractionJobsCreateResponse400
    | V1ExtractionJobsCreateResponse401
    | V1ExtractionJobsCreateResponse403
    | V1ExtractionJobsCreateResponse406
    | V1ExtractionJobsCreateResponse409
    | V1ExtractionJobsCreateResponse413
    | V1ExtractionJobsCreateResponse415
    | V1ExtractionJobsCreateResponse422
    | V1ExtractionJobsCreateResponse429
    | V1ExtractionJobsCreateResponse503
]:
    """
    Args:
        idempotency_key (str):
        body (JobCreateRequest): Rejects members it does not know, so a typo in a field name is an
            error, not a default.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[V1ExtractionJobsCreateResponse202 | V1ExtractionJobsCreateResponse400 | V1ExtractionJobsCreateResponse401 | V1ExtractionJobsCreateResponse403 | V1ExtractionJobsCreateResponse406 | V1ExtractionJobsCreateResponse409 | V1ExtractionJobsCreateResponse413 | V1ExtractionJobsCreateResponse415 | V1ExtractionJobsCreateResponse422 | V1ExtractionJobsCreateResponse429 | V1ExtractionJobsCreateResponse503]
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
    body: JobCreateRequest,
    idempotency_key: str,
) -> (
    V1ExtractionJobsCreateResponse202
    | V1ExtractionJobsCreateResponse400
    | V1ExtractionJobsCreateResponse401
    | V1ExtractionJobsCreateResponse403
    | V1ExtractionJobsCreateResponse406
    | V1ExtractionJobsCreateResponse409
    | V1ExtractionJobsCreateResponse413
    | V1ExtractionJobsCreateResponse415
    | V1ExtractionJobsCreateResponse422
    | V1ExtractionJobsCreateResponse429
    | V1ExtractionJobsCreateResponse503
    | None
):
    """
    Args:
        idempotency_key (str):
        body (JobCreateRequest): Rejects members it does not know, so a typo in a field name is an
            error, not a default.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        V1ExtractionJobsCreateResponse202 | V1ExtractionJobsCreateResponse400 | V1ExtractionJobsCreateResponse401 | V1ExtractionJobsCreateResponse403 | V1ExtractionJobsCreateResponse406 | V1ExtractionJobsCreateResponse409 | V1ExtractionJobsCreateResponse413 | V1ExtractionJobsCreateResponse415 | V1ExtractionJobsCreateResponse422 | V1ExtractionJobsCreateResponse429 | V1ExtractionJobsCreateResponse503
    """

    return sync_detailed(
        client=client,
        body=body,
        idempotency_key=idempotency_key,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: JobCreateRequest,
    idempotency_key: str,
) -> Response[
    V1ExtractionJobsCreateResponse202
    | V1ExtractionJobsCreateResponse400
    | V1ExtractionJobsCreateResponse401
    | V1ExtractionJobsCreateResponse403
    | V1ExtractionJobsCreateResponse406
    | V1ExtractionJobsCreateResponse409
    | V1ExtractionJobsCreateResponse413
    | V1ExtractionJobsCreateResponse415
    | V1ExtractionJobsCreateResponse422
    | V1ExtractionJobsCreateResponse429
    | V1ExtractionJobsCreateResponse503
]:
    """
    Args:
        idempotency_key (str):
        body (JobCreateRequest): Rejects members it does not know, so a typo in a field name is an
            error, not a default.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[V1ExtractionJobsCreateResponse202 | V1ExtractionJobsCreateResponse400 | V1ExtractionJobsCreateResponse401 | V1ExtractionJobsCreateResponse403 | V1ExtractionJobsCreateResponse406 | V1ExtractionJobsCreateResponse409 | V1ExtractionJobsCreateResponse413 | V1ExtractionJobsCreateResponse415 | V1ExtractionJobsCreateResponse422 | V1ExtractionJobsCreateResponse429 | V1ExtractionJobsCreateResponse503]
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
    body: JobCreateRequest,
    idempotency_key: str,
) -> (
    V1ExtractionJobsCreateResponse202
    | V1ExtractionJobsCreateResponse400
    | V1ExtractionJobsCreateResponse401
    | V1ExtractionJobsCreateResponse403
    | V1ExtractionJobsCreateResponse406
    | V1ExtractionJobsCreateResponse409
    | V1ExtractionJobsCreateResponse413
    | V1ExtractionJobsCreateResponse415
    | V1ExtractionJobsCreateResponse422
    | V1ExtractionJobsCreateResponse429
    | V1ExtractionJobsCreateResponse503
    | None
):
    """
    Args:
        idempotency_key (str):
        body (JobCreateRequest): Rejects members it does not know, so a typo in a field name is an
            error, not a default.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        V1ExtractionJobsCreateResponse202 | V1ExtractionJobsCreateResponse400 | V1ExtractionJobsCreateResponse401 | V1ExtractionJobsCreateResponse403 | V1ExtractionJobsCreateResponse406 | V1ExtractionJobsCreateResponse409 | V1ExtractionJobsCreateResponse413 | V1ExtractionJobsCreateResponse415 | V1ExtractionJobsCreateResponse422 | V1ExtractionJobsCreateResponse429 | V1ExtractionJobsCreateResponse503
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
            idempotency_key=idempotency_key,
        )
    ).parsed
