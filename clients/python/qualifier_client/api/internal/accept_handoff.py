from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.accept_handoff_body import AcceptHandoffBody
from ...models.accept_handoff_response_200 import AcceptHandoffResponse200
from ...models.error import Error
from ...types import Response


def _get_kwargs(
    org: str,
    id: str,
    hid: str,
    *,
    body: AcceptHandoffBody,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/internal/v1/orgs/{org}/leads/{id}/handoffs/{hid}/accept".format(
            org=quote(str(org), safe=""),
            id=quote(str(id), safe=""),
            hid=quote(str(hid), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> AcceptHandoffResponse200 | Error | None:
    if response.status_code == 200:
        response_200 = AcceptHandoffResponse200.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = Error.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = Error.from_dict(response.json())

        return response_401

    if response.status_code == 404:
        response_404 = Error.from_dict(response.json())

        return response_404

    if response.status_code == 408:
        response_408 = Error.from_dict(response.json())

        return response_408

    if response.status_code == 409:
        response_409 = Error.from_dict(response.json())

        return response_409

    if response.status_code == 413:
        response_413 = Error.from_dict(response.json())

        return response_413

    if response.status_code == 415:
        response_415 = Error.from_dict(response.json())

        return response_415

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
) -> Response[AcceptHandoffResponse200 | Error]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    org: str,
    id: str,
    hid: str,
    *,
    client: AuthenticatedClient,
    body: AcceptHandoffBody,
) -> Response[AcceptHandoffResponse200 | Error]:
    """An operator takes the conversation (only from `requested`).

    Args:
        org (str):
        id (str):
        hid (str):
        body (AcceptHandoffBody):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AcceptHandoffResponse200 | Error]
    """

    kwargs = _get_kwargs(
        org=org,
        id=id,
        hid=hid,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    org: str,
    id: str,
    hid: str,
    *,
    client: AuthenticatedClient,
    body: AcceptHandoffBody,
) -> AcceptHandoffResponse200 | Error | None:
    """An operator takes the conversation (only from `requested`).

    Args:
        org (str):
        id (str):
        hid (str):
        body (AcceptHandoffBody):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AcceptHandoffResponse200 | Error
    """

    return sync_detailed(
        org=org,
        id=id,
        hid=hid,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    org: str,
    id: str,
    hid: str,
    *,
    client: AuthenticatedClient,
    body: AcceptHandoffBody,
) -> Response[AcceptHandoffResponse200 | Error]:
    """An operator takes the conversation (only from `requested`).

    Args:
        org (str):
        id (str):
        hid (str):
        body (AcceptHandoffBody):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AcceptHandoffResponse200 | Error]
    """

    kwargs = _get_kwargs(
        org=org,
        id=id,
        hid=hid,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    org: str,
    id: str,
    hid: str,
    *,
    client: AuthenticatedClient,
    body: AcceptHandoffBody,
) -> AcceptHandoffResponse200 | Error | None:
    """An operator takes the conversation (only from `requested`).

    Args:
        org (str):
        id (str):
        hid (str):
        body (AcceptHandoffBody):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AcceptHandoffResponse200 | Error
    """

    return (
        await asyncio_detailed(
            org=org,
            id=id,
            hid=hid,
            client=client,
            body=body,
        )
    ).parsed
