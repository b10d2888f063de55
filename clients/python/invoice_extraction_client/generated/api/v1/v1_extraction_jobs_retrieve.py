from http import HTTPStatus
from typing import Any
from urllib.parse import quote
from uuid import UUID

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.job_detail import JobDetail
from ...models.v1_extraction_jobs_retrieve_response_401 import (
    V1ExtractionJobsRetrieveResponse401,
)
from ...models.v1_extraction_jobs_retrieve_response_403 import (
    V1ExtractionJobsRetrieveResponse403,
)
from ...models.v1_extraction_jobs_retrieve_response_404 import (
    V1ExtractionJobsRetrieveResponse404,
)
from ...models.v1_extraction_jobs_retrieve_response_406 import (
    V1ExtractionJobsRetrieveResponse406,
)
from ...types import Response


def _get_kwargs(
    job_id: UUID,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/extraction-jobs/{job_id}".format(
            job_id=quote(str(job_id), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> (
    JobDetail
    | V1ExtractionJobsRetrieveResponse401
    | V1ExtractionJobsRetrieveResponse403
    | V1ExtractionJobsRetrieveResponse404
    | V1ExtractionJobsRetrieveResponse406
    | None
):
    if response.status_code == 200:
        response_200 = JobDetail.from_dict(response.json())

        return response_200

    if response.status_code == 401:
        response_401 = V1ExtractionJobsRetrieveResponse401.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = V1ExtractionJobsRetrieveResponse403.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = V1ExtractionJobsRetrieveResponse404.from_dict(response.json())

        return response_404

    if response.status_code == 406:
        response_406 = V1ExtractionJobsRetrieveResponse406.from_dict(response.json())

        return response_406

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[
    JobDetail
    | V1ExtractionJobsRetrieveResponse401
    | V1ExtractionJobsRetrieveResponse403
    | V1ExtractionJobsRetrieveResponse404
    | V1ExtractionJobsRetrieveResponse406
]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    job_id: UUID,
    *,
    client: AuthenticatedClient,
) -> Response[
    JobDetail
    | V1ExtractionJobsRetrieveResponse401
    | V1ExtractionJobsRetrieveResponse403
    | V1ExtractionJobsRetrieveResponse404
    | V1ExtractionJobsRetrieveResponse406
]:
    """
    Args:
        job_id (UUID):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[JobDetail | V1ExtractionJobsRetrieveResponse401 | V1ExtractionJobsRetrieveResponse403 | V1ExtractionJobsRetrieveResponse404 | V1ExtractionJobsRetrieveResponse406]
    """

    kwargs = _get_kwargs(
        job_id=job_id,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    job_id: UUID,
    *,
    client: AuthenticatedClient,
) -> (
    JobDetail
    | V1ExtractionJobsRetrieveResponse401
    | V1ExtractionJobsRetrieveResponse403
    | V1ExtractionJobsRetrieveResponse404
    | V1ExtractionJobsRetrieveResponse406
    | None
):
    """
    Args:
        job_id (UUID):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        JobDetail | V1ExtractionJobsRetrieveResponse401 | V1ExtractionJobsRetrieveResponse403 | V1ExtractionJobsRetrieveResponse404 | V1ExtractionJobsRetrieveResponse406
    """

    return sync_detailed(
        job_id=job_id,
        client=client,
    ).parsed


async def asyncio_detailed(
    job_id: UUID,
    *,
    client: AuthenticatedClient,
) -> Response[
    JobDetail
    | V1ExtractionJobsRetrieveResponse401
    | V1ExtractionJobsRetrieveResponse403
    | V1ExtractionJobsRetrieveResponse404
    | V1ExtractionJobsRetrieveResponse406
]:
    """
    Args:
        job_id (UUID):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[JobDetail | V1ExtractionJobsRetrieveResponse401 | V1ExtractionJobsRetrieveResponse403 | V1ExtractionJobsRetrieveResponse404 | V1ExtractionJobsRetrieveResponse406]
    """

    kwargs = _get_kwargs(
        job_id=job_id,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    job_id: UUID,
    *,
    client: AuthenticatedClient,
) -> (
    JobDetail
    | V1ExtractionJobsRetrieveResponse401
    | V1ExtractionJobsRetrieveResponse403
    | V1ExtractionJobsRetrieveResponse404
    | V1ExtractionJobsRetrieveResponse406
    | None
):
    """
    Args:
        job_id (UUID):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        JobDetail | V1ExtractionJobsRetrieveResponse401 | V1ExtractionJobsRetrieveResponse403 | V1ExtractionJobsRetrieveResponse404 | V1ExtractionJobsRetrieveResponse406
    """

    return (
        await asyncio_detailed(
            job_id=job_id,
            client=client,
        )
    ).parsed
