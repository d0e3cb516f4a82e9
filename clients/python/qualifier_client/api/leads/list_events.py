from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.event_type import EventType
from ...models.list_events_response_200 import ListEventsResponse200
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    after: str | Unset = UNSET,
    limit: int | Unset = 100,
    type_: EventType | Unset = UNSET,
) -> dict[str, Any]:
    params: dict[str, Any] = {}

    params["after"] = after

    params["limit"] = limit

    json_type_: str | Unset = UNSET
    if not isinstance(type_, Unset):
        json_type_ = type_.value

    params["type"] = json_type_

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/events",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | ListEventsResponse200 | None:
    if response.status_code == 200:
        response_200 = ListEventsResponse200.from_dict(response.json())

        return response_200

    if response.status_code == 401:
        response_401 = Error.from_dict(response.json())

        return response_401

    if response.status_code == 410:
        response_410 = Error.from_dict(response.json())

        return response_410

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
) -> Response[Error | ListEventsResponse200]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    after: str | Unset = UNSET,
    limit: int | Unset = 100,
    type_: EventType | Unset = UNSET,
) -> Response[Error | ListEventsResponse200]:
    """Every event of the org, as delivered, in commit order (catching up).

     Start without `after`, follow `next_cursor` until a page is empty, keep the last
    `next_cursor` and resume from it later: every event arrives exactly once, in commit order,
    whatever the webhook configuration. Each envelope is byte for byte the body a receiver
    was sent (same `id`: dedupe against webhooks by it). Test events are not in the feed.
    Events are kept `QUALIFIER_EVENT_RETENTION_DAYS` (default 30). A page holds at most
    `QUALIFIER_MAX_PAGE_BYTES` (default 1 MiB) of JSON: it may end before `limit` events, at
    a whole event, and `next_cursor` continues from there. Cursors are opaque (sealed; they
    reveal nothing of other orgs' volume); cursors issued before cursors were sealed keep working.

    Args:
        after (str | Unset):
        limit (int | Unset):  Default: 100.
        type_ (EventType | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | ListEventsResponse200]
    """

    kwargs = _get_kwargs(
        after=after,
        limit=limit,
        type_=type_,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    after: str | Unset = UNSET,
    limit: int | Unset = 100,
    type_: EventType | Unset = UNSET,
) -> Error | ListEventsResponse200 | None:
    """Every event of the org, as delivered, in commit order (catching up).

     Start without `after`, follow `next_cursor` until a page is empty, keep the last
    `next_cursor` and resume from it later: every event arrives exactly once, in commit order,
    whatever the webhook configuration. Each envelope is byte for byte the body a receiver
    was sent (same `id`: dedupe against webhooks by it). Test events are not in the feed.
    Events are kept `QUALIFIER_EVENT_RETENTION_DAYS` (default 30). A page holds at most
    `QUALIFIER_MAX_PAGE_BYTES` (default 1 MiB) of JSON: it may end before `limit` events, at
    a whole event, and `next_cursor` continues from there. Cursors are opaque (sealed; they
    reveal nothing of other orgs' volume); cursors issued before cursors were sealed keep working.

    Args:
        after (str | Unset):
        limit (int | Unset):  Default: 100.
        type_ (EventType | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | ListEventsResponse200
    """

    return sync_detailed(
        client=client,
        after=after,
        limit=limit,
        type_=type_,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    after: str | Unset = UNSET,
    limit: int | Unset = 100,
    type_: EventType | Unset = UNSET,
) -> Response[Error | ListEventsResponse200]:
    """Every event of the org, as delivered, in commit order (catching up).

     Start without `after`, follow `next_cursor` until a page is empty, keep the last
    `next_cursor` and resume from it later: every event arrives exactly once, in commit order,
    whatever the webhook configuration. Each envelope is byte for byte the body a receiver
    was sent (same `id`: dedupe against webhooks by it). Test events are not in the feed.
    Events are kept `QUALIFIER_EVENT_RETENTION_DAYS` (default 30). A page holds at most
    `QUALIFIER_MAX_PAGE_BYTES` (default 1 MiB) of JSON: it may end before `limit` events, at
    a whole event, and `next_cursor` continues from there. Cursors are opaque (sealed; they
    reveal nothing of other orgs' volume); cursors issued before cursors were sealed keep working.

    Args:
        after (str | Unset):
        limit (int | Unset):  Default: 100.
        type_ (EventType | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | ListEventsResponse200]
    """

    kwargs = _get_kwargs(
        after=after,
        limit=limit,
        type_=type_,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    after: str | Unset = UNSET,
    limit: int | Unset = 100,
    type_: EventType | Unset = UNSET,
) -> Error | ListEventsResponse200 | None:
    """Every event of the org, as delivered, in commit order (catching up).

     Start without `after`, follow `next_cursor` until a page is empty, keep the last
    `next_cursor` and resume from it later: every event arrives exactly once, in commit order,
    whatever the webhook configuration. Each envelope is byte for byte the body a receiver
    was sent (same `id`: dedupe against webhooks by it). Test events are not in the feed.
    Events are kept `QUALIFIER_EVENT_RETENTION_DAYS` (default 30). A page holds at most
    `QUALIFIER_MAX_PAGE_BYTES` (default 1 MiB) of JSON: it may end before `limit` events, at
    a whole event, and `next_cursor` continues from there. Cursors are opaque (sealed; they
    reveal nothing of other orgs' volume); cursors issued before cursors were sealed keep working.

    Args:
        after (str | Unset):
        limit (int | Unset):  Default: 100.
        type_ (EventType | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | ListEventsResponse200
    """

    return (
        await asyncio_detailed(
            client=client,
            after=after,
            limit=limit,
            type_=type_,
        )
    ).parsed
