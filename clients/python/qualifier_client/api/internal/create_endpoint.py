from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.create_endpoint_response_201 import CreateEndpointResponse201
from ...models.error import Error
from ...models.webhook_input import WebhookInput
from ...types import Response


def _get_kwargs(
    org: str,
    *,
    body: WebhookInput,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/internal/v1/orgs/{org}/endpoints".format(
            org=quote(str(org), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> CreateEndpointResponse201 | Error | None:
    if response.status_code == 201:
        response_201 = CreateEndpointResponse201.from_dict(response.json())

        return response_201

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
) -> Response[CreateEndpointResponse201 | Error]:
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
    body: WebhookInput,
) -> Response[CreateEndpointResponse201 | Error]:
    """One more endpoint for the org; its signing secret is returned this once.

     Each event goes to every enabled endpoint subscribed to its type, signed with that endpoint's
    secret, under a delivery id of its own, with its own retries, health, throttle and order. At most
    `QUALIFIER_MAX_ENDPOINTS_PER_ORG` (10) per org: beyond it, 422 `Endpoint limit reached`.

    Args:
        org (str):
        body (WebhookInput):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[CreateEndpointResponse201 | Error]
    """

    kwargs = _get_kwargs(
        org=org,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    org: str,
    *,
    client: AuthenticatedClient,
    body: WebhookInput,
) -> CreateEndpointResponse201 | Error | None:
    """One more endpoint for the org; its signing secret is returned this once.

     Each event goes to every enabled endpoint subscribed to its type, signed with that endpoint's
    secret, under a delivery id of its own, with its own retries, health, throttle and order. At most
    `QUALIFIER_MAX_ENDPOINTS_PER_ORG` (10) per org: beyond it, 422 `Endpoint limit reached`.

    Args:
        org (str):
        body (WebhookInput):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        CreateEndpointResponse201 | Error
    """

    return sync_detailed(
        org=org,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    org: str,
    *,
    client: AuthenticatedClient,
    body: WebhookInput,
) -> Response[CreateEndpointResponse201 | Error]:
    """One more endpoint for the org; its signing secret is returned this once.

     Each event goes to every enabled endpoint subscribed to its type, signed with that endpoint's
    secret, under a delivery id of its own, with its own retries, health, throttle and order. At most
    `QUALIFIER_MAX_ENDPOINTS_PER_ORG` (10) per org: beyond it, 422 `Endpoint limit reached`.

    Args:
        org (str):
        body (WebhookInput):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[CreateEndpointResponse201 | Error]
    """

    kwargs = _get_kwargs(
        org=org,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    org: str,
    *,
    client: AuthenticatedClient,
    body: WebhookInput,
) -> CreateEndpointResponse201 | Error | None:
    """One more endpoint for the org; its signing secret is returned this once.

     Each event goes to every enabled endpoint subscribed to its type, signed with that endpoint's
    secret, under a delivery id of its own, with its own retries, health, throttle and order. At most
    `QUALIFIER_MAX_ENDPOINTS_PER_ORG` (10) per org: beyond it, 422 `Endpoint limit reached`.

    Args:
        org (str):
        body (WebhookInput):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        CreateEndpointResponse201 | Error
    """

    return (
        await asyncio_detailed(
            org=org,
            client=client,
            body=body,
        )
    ).parsed
