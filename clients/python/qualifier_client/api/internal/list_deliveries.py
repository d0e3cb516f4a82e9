from http import HTTPStatus
from typing import Any
from urllib.parse import quote
from uuid import UUID

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.delivery_status import DeliveryStatus
from ...models.error import Error
from ...models.event_type import EventType
from ...models.list_deliveries_response_200 import ListDeliveriesResponse200
from ...types import UNSET, Response, Unset


def _get_kwargs(
    org: str,
    *,
    status: DeliveryStatus | Unset = UNSET,
    event_type: EventType | Unset = UNSET,
    lead_id: UUID | Unset = UNSET,
    endpoint_id: UUID | Unset = UNSET,
    since: str | Unset = UNSET,
    until: str | Unset = UNSET,
    cursor: str | Unset = UNSET,
    limit: int | Unset = 50,
) -> dict[str, Any]:
    params: dict[str, Any] = {}

    json_status: str | Unset = UNSET
    if not isinstance(status, Unset):
        json_status = status.value

    params["status"] = json_status

    json_event_type: str | Unset = UNSET
    if not isinstance(event_type, Unset):
        json_event_type = event_type.value

    params["event_type"] = json_event_type

    json_lead_id: str | Unset = UNSET
    if not isinstance(lead_id, Unset):
        json_lead_id = str(lead_id)
    params["lead_id"] = json_lead_id

    json_endpoint_id: str | Unset = UNSET
    if not isinstance(endpoint_id, Unset):
        json_endpoint_id = str(endpoint_id)
    params["endpoint_id"] = json_endpoint_id

    params["since"] = since

    params["until"] = until

    params["cursor"] = cursor

    params["limit"] = limit

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/internal/v1/orgs/{org}/deliveries".format(
            org=quote(str(org), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | ListDeliveriesResponse200 | None:
    if response.status_code == 200:
        response_200 = ListDeliveriesResponse200.from_dict(response.json())

        return response_200

    if response.status_code == 401:
        response_401 = Error.from_dict(response.json())

        return response_401

    if response.status_code == 404:
        response_404 = Error.from_dict(response.json())

        return response_404

    if response.status_code == 422:
        response_422 = Error.from_dict(response.json())

        return response_422

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
) -> Response[Error | ListDeliveriesResponse200]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    org: str,
    *,
    client: AuthenticatedClient,
    status: DeliveryStatus | Unset = UNSET,
    event_type: EventType | Unset = UNSET,
    lead_id: UUID | Unset = UNSET,
    endpoint_id: UUID | Unset = UNSET,
    since: str | Unset = UNSET,
    until: str | Unset = UNSET,
    cursor: str | Unset = UNSET,
    limit: int | Unset = 50,
) -> Response[Error | ListDeliveriesResponse200]:
    """The org's webhook deliveries, newest first, filtered and keyset-paged.

    Args:
        org (str):
        status (DeliveryStatus | Unset):
        event_type (EventType | Unset):
        lead_id (UUID | Unset):
        endpoint_id (UUID | Unset):
        since (str | Unset):
        until (str | Unset):
        cursor (str | Unset):
        limit (int | Unset):  Default: 50.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | ListDeliveriesResponse200]
    """

    kwargs = _get_kwargs(
        org=org,
        status=status,
        event_type=event_type,
        lead_id=lead_id,
        endpoint_id=endpoint_id,
        since=since,
        until=until,
        cursor=cursor,
        limit=limit,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    org: str,
    *,
    client: AuthenticatedClient,
    status: DeliveryStatus | Unset = UNSET,
    event_type: EventType | Unset = UNSET,
    lead_id: UUID | Unset = UNSET,
    endpoint_id: UUID | Unset = UNSET,
    since: str | Unset = UNSET,
    until: str | Unset = UNSET,
    cursor: str | Unset = UNSET,
    limit: int | Unset = 50,
) -> Error | ListDeliveriesResponse200 | None:
    """The org's webhook deliveries, newest first, filtered and keyset-paged.

    Args:
        org (str):
        status (DeliveryStatus | Unset):
        event_type (EventType | Unset):
        lead_id (UUID | Unset):
        endpoint_id (UUID | Unset):
        since (str | Unset):
        until (str | Unset):
        cursor (str | Unset):
        limit (int | Unset):  Default: 50.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | ListDeliveriesResponse200
    """

    return sync_detailed(
        org=org,
        client=client,
        status=status,
        event_type=event_type,
        lead_id=lead_id,
        endpoint_id=endpoint_id,
        since=since,
        until=until,
        cursor=cursor,
        limit=limit,
    ).parsed


async def asyncio_detailed(
    org: str,
    *,
    client: AuthenticatedClient,
    status: DeliveryStatus | Unset = UNSET,
    event_type: EventType | Unset = UNSET,
    lead_id: UUID | Unset = UNSET,
    endpoint_id: UUID | Unset = UNSET,
    since: str | Unset = UNSET,
    until: str | Unset = UNSET,
    cursor: str | Unset = UNSET,
    limit: int | Unset = 50,
) -> Response[Error | ListDeliveriesResponse200]:
    """The org's webhook deliveries, newest first, filtered and keyset-paged.

    Args:
        org (str):
        status (DeliveryStatus | Unset):
        event_type (EventType | Unset):
        lead_id (UUID | Unset):
        endpoint_id (UUID | Unset):
        since (str | Unset):
        until (str | Unset):
        cursor (str | Unset):
        limit (int | Unset):  Default: 50.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | ListDeliveriesResponse200]
    """

    kwargs = _get_kwargs(
        org=org,
        status=status,
        event_type=event_type,
        lead_id=lead_id,
        endpoint_id=endpoint_id,
        since=since,
        until=until,
        cursor=cursor,
        limit=limit,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    org: str,
    *,
    client: AuthenticatedClient,
    status: DeliveryStatus | Unset = UNSET,
    event_type: EventType | Unset = UNSET,
    lead_id: UUID | Unset = UNSET,
    endpoint_id: UUID | Unset = UNSET,
    since: str | Unset = UNSET,
    until: str | Unset = UNSET,
    cursor: str | Unset = UNSET,
    limit: int | Unset = 50,
) -> Error | ListDeliveriesResponse200 | None:
    """The org's webhook deliveries, newest first, filtered and keyset-paged.

    Args:
        org (str):
        status (DeliveryStatus | Unset):
        event_type (EventType | Unset):
        lead_id (UUID | Unset):
        endpoint_id (UUID | Unset):
        since (str | Unset):
        until (str | Unset):
        cursor (str | Unset):
        limit (int | Unset):  Default: 50.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | ListDeliveriesResponse200
    """

    return (
        await asyncio_detailed(
            org=org,
            client=client,
            status=status,
            event_type=event_type,
            lead_id=lead_id,
            endpoint_id=endpoint_id,
            since=since,
            until=until,
            cursor=cursor,
            limit=limit,
        )
    ).parsed
