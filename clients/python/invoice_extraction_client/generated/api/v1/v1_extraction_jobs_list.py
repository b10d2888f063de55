from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.v1_extraction_jobs_list_response_200 import (
    V1ExtractionJobsListResponse200,
)
from ...models.v1_extraction_jobs_list_response_400 import (
    V1ExtractionJobsListResponse400,
)
from ...models.v1_extraction_jobs_list_response_401 import (
    V1ExtractionJobsListResponse401,
)
from ...models.v1_extraction_jobs_list_response_403 import (
    V1ExtractionJobsListResponse403,
)
from ...models.v1_extraction_jobs_list_response_404 import (
    V1ExtractionJobsListResponse404,
)
from ...models.v1_extraction_jobs_list_response_406 import (
    V1ExtractionJobsListResponse406,
)
from ...models.v1_extraction_jobs_list_state import V1ExtractionJobsListState
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    cursor: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    state: V1ExtractionJobsListState | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["cursor"] = cursor

    params["page_size"] = page_size

    json_state: str | Unset = UNSET
    if not isinstance(state, Unset):
        json_state = state.value

    params["state"] = json_state

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/extraction-jobs",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> (
    V1ExtractionJobsListResponse200
    | V1ExtractionJobsListResponse400
    | V1ExtractionJobsListResponse401
    | V1ExtractionJobsListResponse403
    | V1ExtractionJobsListResponse404
    | V1ExtractionJobsListResponse406
    | None
):
    if response.status_code == 200:
        response_200 = V1ExtractionJobsListResponse200.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = V1ExtractionJobsListResponse400.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = V1ExtractionJobsListResponse401.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = V1ExtractionJobsListResponse403.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = V1ExtractionJobsListResponse404.from_dict(response.json())

        return response_404

    if response.status_code == 406:
        response_406 = V1ExtractionJobsListResponse406.from_dict(response.json())

        return response_406

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[
    V1ExtractionJobsListResponse200
    | V1ExtractionJobsListResponse400
    | V1ExtractionJobsListResponse401
    | V1ExtractionJobsListResponse403
    | V1ExtractionJobsListResponse404
    | V1ExtractionJobsListResponse406
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
    cursor: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    state: V1ExtractionJobsListState | Unset = UNSET,
) -> Response[
    V1ExtractionJobsListResponse200
    | V1ExtractionJobsListResponse400
    | V1ExtractionJobsListResponse401
    | V1ExtractionJobsListResponse403
    | V1ExtractionJobsListResponse404
    | V1ExtractionJobsListResponse406
]:
    """
    Args:
        cursor (str | Unset):
        page_size (int | Unset):
        state (V1ExtractionJobsListState | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[V1ExtractionJobsListResponse200 | V1ExtractionJobsListResponse400 | V1ExtractionJobsListResponse401 | V1ExtractionJobsListResponse403 | V1ExtractionJobsListResponse404 | V1ExtractionJobsListResponse406]
    """

    kwargs = _get_kwargs(
        cursor=cursor,
        page_size=page_size,
        state=state,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    cursor: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    state: V1ExtractionJobsListState | Unset = UNSET,
) -> (
    V1ExtractionJobsListResponse200
    | V1ExtractionJobsListResponse400
    | V1ExtractionJobsListResponse401
    | V1ExtractionJobsListResponse403
    | V1ExtractionJobsListResponse404
    | V1ExtractionJobsListResponse406
    | None
):
    """
    Args:
        cursor (str | Unset):
        page_size (int | Unset):
        state (V1ExtractionJobsListState | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        V1ExtractionJobsListResponse200 | V1ExtractionJobsListResponse400 | V1ExtractionJobsListResponse401 | V1ExtractionJobsListResponse403 | V1ExtractionJobsListResponse404 | V1ExtractionJobsListResponse406
    """

    return sync_detailed(
        client=client,
        cursor=cursor,
        page_size=page_size,
        state=state,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    cursor: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    state: V1ExtractionJobsListState | Unset = UNSET,
) -> Response[
    V1ExtractionJobsListResponse200
    | V1ExtractionJobsListResponse400
    | V1ExtractionJobsListResponse401
    | V1ExtractionJobsListResponse403
    | V1ExtractionJobsListResponse404
    | V1ExtractionJobsListResponse406
]:
    """
    Args:
        cursor (str | Unset):
        page_size (int | Unset):
        state (V1ExtractionJobsListState | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[V1ExtractionJobsListResponse200 | V1ExtractionJobsListResponse400 | V1ExtractionJobsListResponse401 | V1ExtractionJobsListResponse403 | V1ExtractionJobsListResponse404 | V1ExtractionJobsListResponse406]
    """

    kwargs = _get_kwargs(
        cursor=cursor,
        page_size=page_size,
        state=state,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    cursor: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    state: V1ExtractionJobsListState | Unset = UNSET,
) -> (
    V1ExtractionJobsListResponse200
    | V1ExtractionJobsListResponse400
    | V1ExtractionJobsListResponse401
    | V1ExtractionJobsListResponse403
    | V1ExtractionJobsListResponse404
    | V1ExtractionJobsListResponse406
    | None
):
    """
    Args:
        cursor (str | Unset):
        page_size (int | Unset):
        state (V1ExtractionJobsListState | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        V1ExtractionJobsListResponse200 | V1ExtractionJobsListResponse400 | V1ExtractionJobsListResponse401 | V1ExtractionJobsListResponse403 | V1ExtractionJobsListResponse404 | V1ExtractionJobsListResponse406
    """

    return (
        await asyncio_detailed(
            client=client,
            cursor=cursor,
            page_size=page_size,
            state=state,
        )
    ).parsed
