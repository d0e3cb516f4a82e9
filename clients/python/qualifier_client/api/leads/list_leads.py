from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.list_leads_response_200 import ListLeadsResponse200
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    updated_since: str | Unset = UNSET,
    limit: int | Unset = 100,
    cursor: str | Unset = UNSET,
) -> dict[str, Any]:
    params: dict[str, Any] = {}

    params["updated_since"] = updated_since

    params["limit"] = limit

    params["cursor"] = cursor

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/leads",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | ListLeadsResponse200 | None:
    if response.status_code == 200:
        response_200 = ListLeadsResponse200.from_dict(response.json())

        return response_200

    if response.status_code == 401:
        response_401 = Error.from_dict(response.json())

        return response_401

    if response.status_code == 422:
        response_422 = Error.from_dict(response.json())

        return response_422

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
) -> Response[Error | ListLeadsResponse200]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    updated_since: str | Unset = UNSET,
    limit: int | Unset = 100,
    cursor: str | Unset = UNSET,
) -> Response[Error | ListLeadsResponse200]:
    """The org's leads by `updated_at` then `id`, ascending, keyset-paged (catching up).

     For a full resync. Rows that change while you page move to the end of the order, so a
    walk sees every lead at least as of when it started; to follow changes in commit order,
    use `/api/v1/events`.

    Args:
        updated_since (str | Unset):
        limit (int | Unset):  Default: 100.
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | ListLeadsResponse200]
    """

    kwargs = _get_kwargs(
        updated_since=updated_since,
        limit=limit,
        cursor=cursor,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    updated_since: str | Unset = UNSET,
    limit: int | Unset = 100,
    cursor: str | Unset = UNSET,
) -> Error | ListLeadsResponse200 | None:
    """The org's leads by `updated_at` then `id`, ascending, keyset-paged (catching up).

     For a full resync. Rows that change while you page move to the end of the order, so a
    walk sees every lead at least as of when it started; to follow changes in commit order,
    use `/api/v1/events`.

    Args:
        updated_since (str | Unset):
        limit (int | Unset):  Default: 100.
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | ListLeadsResponse200
    """

    return sync_detailed(
        client=client,
        updated_since=updated_since,
        limit=limit,
        cursor=cursor,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    updated_since: str | Unset = UNSET,
    limit: int | Unset = 100,
    cursor: str | Unset = UNSET,
) -> Response[Error | ListLeadsResponse200]:
    """The org's leads by `updated_at` then `id`, ascending, keyset-paged (catching up).

     For a full resync. Rows that change while you page move to the end of the order, so a
    walk sees every lead at least as of when it started; to follow changes in commit order,
    use `/api/v1/events`.

    Args:
        updated_since (str | Unset):
        limit (int | Unset):  Default: 100.
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | ListLeadsResponse200]
    """

    kwargs = _get_kwargs(
        updated_since=updated_since,
        limit=limit,
        cursor=cursor,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    updated_since: str | Unset = UNSET,
    limit: int | Unset = 100,
    cursor: str | Unset = UNSET,
) -> Error | ListLeadsResponse200 | None:
    """The org's leads by `updated_at` then `id`, ascending, keyset-paged (catching up).

     For a full resync. Rows that change while you page move to the end of the order, so a
    walk sees every lead at least as of when it started; to follow changes in commit order,
    use `/api/v1/events`.

    Args:
        updated_since (str | Unset):
        limit (int | Unset):  Default: 100.
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | ListLeadsResponse200
    """

    return (
        await asyncio_detailed(
            client=client,
            updated_since=updated_since,
            limit=limit,
            cursor=cursor,
        )
    ).parsed
