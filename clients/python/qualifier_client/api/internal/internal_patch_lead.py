from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.internal_patch import InternalPatch
from ...models.lead_response import LeadResponse
from ...types import Response


def _get_kwargs(
    org: str,
    id: str,
    *,
    body: InternalPatch,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "patch",
        "url": "/internal/v1/orgs/{org}/leads/{id}".format(
            org=quote(str(org), safe=""),
            id=quote(str(id), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Error | LeadResponse | None:
    if response.status_code == 200:
        response_200 = LeadResponse.from_dict(response.json())

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
) -> Response[Error | LeadResponse]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    org: str,
    id: str,
    *,
    client: AuthenticatedClient,
    body: InternalPatch,
) -> Response[Error | LeadResponse]:
    """The AI agent's and the product's changes to a lead (any stage transition).

    Args:
        org (str):
        id (str):
        body (InternalPatch):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | LeadResponse]
    """

    kwargs = _get_kwargs(
        org=org,
        id=id,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    org: str,
    id: str,
    *,
    client: AuthenticatedClient,
    body: InternalPatch,
) -> Error | LeadResponse | None:
    """The AI agent's and the product's changes to a lead (any stage transition).

    Args:
        org (str):
        id (str):
        body (InternalPatch):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | LeadResponse
    """

    return sync_detailed(
        org=org,
        id=id,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    org: str,
    id: str,
    *,
    client: AuthenticatedClient,
    body: InternalPatch,
) -> Response[Error | LeadResponse]:
    """The AI agent's and the product's changes to a lead (any stage transition).

    Args:
        org (str):
        id (str):
        body (InternalPatch):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | LeadResponse]
    """

    kwargs = _get_kwargs(
        org=org,
        id=id,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    org: str,
    id: str,
    *,
    client: AuthenticatedClient,
    body: InternalPatch,
) -> Error | LeadResponse | None:
    """The AI agent's and the product's changes to a lead (any stage transition).

    Args:
        org (str):
        id (str):
        body (InternalPatch):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | LeadResponse
    """

    return (
        await asyncio_detailed(
            org=org,
            id=id,
            client=client,
            body=body,
        )
    ).parsed
