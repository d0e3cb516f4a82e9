from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.test_endpoint_filter_body import TestEndpointFilterBody
from ...models.test_endpoint_filter_response_200 import TestEndpointFilterResponse200
from ...types import Response


def _get_kwargs(
    org: str,
    endpoint_id: str,
    *,
    body: TestEndpointFilterBody,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/internal/v1/orgs/{org}/endpoints/{endpoint_id}/filter-test".format(
            org=quote(str(org), safe=""),
            endpoint_id=quote(str(endpoint_id), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | TestEndpointFilterResponse200 | None:
    if response.status_code == 200:
        response_200 = TestEndpointFilterResponse200.from_dict(response.json())

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
) -> Response[Error | TestEndpointFilterResponse200]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    org: str,
    endpoint_id: str,
    *,
    client: AuthenticatedClient,
    body: TestEndpointFilterBody,
) -> Response[Error | TestEndpointFilterResponse200]:
    """Whether the endpoint's saved filter matches an event's envelope.

     `true` for an endpoint without a filter. The same route is at `…/webhook/filter-test` for the org's
    primary endpoint.

    Args:
        org (str):
        endpoint_id (str):
        body (TestEndpointFilterBody):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | TestEndpointFilterResponse200]
    """

    kwargs = _get_kwargs(
        org=org,
        endpoint_id=endpoint_id,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    org: str,
    endpoint_id: str,
    *,
    client: AuthenticatedClient,
    body: TestEndpointFilterBody,
) -> Error | TestEndpointFilterResponse200 | None:
    """Whether the endpoint's saved filter matches an event's envelope.

     `true` for an endpoint without a filter. The same route is at `…/webhook/filter-test` for the org's
    primary endpoint.

    Args:
        org (str):
        endpoint_id (str):
        body (TestEndpointFilterBody):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | TestEndpointFilterResponse200
    """

    return sync_detailed(
        org=org,
        endpoint_id=endpoint_id,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    org: str,
    endpoint_id: str,
    *,
    client: AuthenticatedClient,
    body: TestEndpointFilterBody,
) -> Response[Error | TestEndpointFilterResponse200]:
    """Whether the endpoint's saved filter matches an event's envelope.

     `true` for an endpoint without a filter. The same route is at `…/webhook/filter-test` for the org's
    primary endpoint.

    Args:
        org (str):
        endpoint_id (str):
        body (TestEndpointFilterBody):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | TestEndpointFilterResponse200]
    """

    kwargs = _get_kwargs(
        org=org,
        endpoint_id=endpoint_id,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    org: str,
    endpoint_id: str,
    *,
    client: AuthenticatedClient,
    body: TestEndpointFilterBody,
) -> Error | TestEndpointFilterResponse200 | None:
    """Whether the endpoint's saved filter matches an event's envelope.

     `true` for an endpoint without a filter. The same route is at `…/webhook/filter-test` for the org's
    primary endpoint.

    Args:
        org (str):
        endpoint_id (str):
        body (TestEndpointFilterBody):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | TestEndpointFilterResponse200
    """

    return (
        await asyncio_detailed(
            org=org,
            endpoint_id=endpoint_id,
            client=client,
            body=body,
        )
    ).parsed
