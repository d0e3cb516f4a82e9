from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.lead_response import LeadResponse
from ...types import UNSET, Response, Unset


def _get_kwargs(
    lead_id: str,
    *,
    if_none_match: str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(if_none_match, Unset):
        headers["If-None-Match"] = if_none_match

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/leads/{lead_id}".format(
            lead_id=quote(str(lead_id), safe=""),
        ),
    }

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Any | Error | LeadResponse | None:
    if response.status_code == 200:
        response_200 = LeadResponse.from_dict(response.json())

        return response_200

    if response.status_code == 304:
        response_304 = cast(Any, None)
        return response_304

    if response.status_code == 401:
        response_401 = Error.from_dict(response.json())

        return response_401

    if response.status_code == 404:
        response_404 = Error.from_dict(response.json())

        return response_404

    if response.status_code == 429:
        response_429 = Error.from_dict(response.json())

        return response_429

    if response.status_code == 500:
        response_500 = Error.from_dict(response.json())

        return response_500

    if response.status_code == 503:
        response_503 = Error.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Any | Error | LeadResponse]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    lead_id: str,
    *,
    client: AuthenticatedClient,
    if_none_match: str | Unset = UNSET,
) -> Response[Any | Error | LeadResponse]:
    """Read a lead of the caller's org.

     The answer's `ETag` is the lead's revision, quoted (`"7"`). With `If-None-Match` naming it
    (or `*`), the answer is 304 with no body: the copy the client holds is current.

    Args:
        lead_id (str):
        if_none_match (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Error | LeadResponse]
    """

    kwargs = _get_kwargs(
        lead_id=lead_id,
        if_none_match=if_none_match,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    lead_id: str,
    *,
    client: AuthenticatedClient,
    if_none_match: str | Unset = UNSET,
) -> Any | Error | LeadResponse | None:
    """Read a lead of the caller's org.

     The answer's `ETag` is the lead's revision, quoted (`"7"`). With `If-None-Match` naming it
    (or `*`), the answer is 304 with no body: the copy the client holds is current.

    Args:
        lead_id (str):
        if_none_match (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Error | LeadResponse
    """

    return sync_detailed(
        lead_id=lead_id,
        client=client,
        if_none_match=if_none_match,
    ).parsed


async def asyncio_detailed(
    lead_id: str,
    *,
    client: AuthenticatedClient,
    if_none_match: str | Unset = UNSET,
) -> Response[Any | Error | LeadResponse]:
    """Read a lead of the caller's org.

     The answer's `ETag` is the lead's revision, quoted (`"7"`). With `If-None-Match` naming it
    (or `*`), the answer is 304 with no body: the copy the client holds is current.

    Args:
        lead_id (str):
        if_none_match (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Error | LeadResponse]
    """

    kwargs = _get_kwargs(
        lead_id=lead_id,
        if_none_match=if_none_match,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    lead_id: str,
    *,
    client: AuthenticatedClient,
    if_none_match: str | Unset = UNSET,
) -> Any | Error | LeadResponse | None:
    """Read a lead of the caller's org.

     The answer's `ETag` is the lead's revision, quoted (`"7"`). With `If-None-Match` naming it
    (or `*`), the answer is 304 with no body: the copy the client holds is current.

    Args:
        lead_id (str):
        if_none_match (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Error | LeadResponse
    """

    return (
        await asyncio_detailed(
            lead_id=lead_id,
            client=client,
            if_none_match=if_none_match,
        )
    ).parsed
