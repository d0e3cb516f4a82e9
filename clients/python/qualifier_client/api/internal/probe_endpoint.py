from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.probe_endpoint_response_202 import ProbeEndpointResponse202
from ...types import Response


def _get_kwargs(
    org: str,
    endpoint_id: str,
) -> dict[str, Any]:
    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/internal/v1/orgs/{org}/endpoints/{endpoint_id}/probe".format(
            org=quote(str(org), safe=""),
            endpoint_id=quote(str(endpoint_id), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | ProbeEndpointResponse202 | None:
    if response.status_code == 202:
        response_202 = ProbeEndpointResponse202.from_dict(response.json())

        return response_202

    if response.status_code == 401:
        response_401 = Error.from_dict(response.json())

        return response_401

    if response.status_code == 404:
        response_404 = Error.from_dict(response.json())

        return response_404

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
) -> Response[Error | ProbeEndpointResponse202]:
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
) -> Response[Error | ProbeEndpointResponse202]:
    """ "Check now": a failing endpoint's next probe is due at once.

    Args:
        org (str):
        endpoint_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | ProbeEndpointResponse202]
    """

    kwargs = _get_kwargs(
        org=org,
        endpoint_id=endpoint_id,
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
) -> Error | ProbeEndpointResponse202 | None:
    """ "Check now": a failing endpoint's next probe is due at once.

    Args:
        org (str):
        endpoint_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | ProbeEndpointResponse202
    """

    return sync_detailed(
        org=org,
        endpoint_id=endpoint_id,
        client=client,
    ).parsed


async def asyncio_detailed(
    org: str,
    endpoint_id: str,
    *,
    client: AuthenticatedClient,
) -> Response[Error | ProbeEndpointResponse202]:
    """ "Check now": a failing endpoint's next probe is due at once.

    Args:
        org (str):
        endpoint_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | ProbeEndpointResponse202]
    """

    kwargs = _get_kwargs(
        org=org,
        endpoint_id=endpoint_id,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    org: str,
    endpoint_id: str,
    *,
    client: AuthenticatedClient,
) -> Error | ProbeEndpointResponse202 | None:
    """ "Check now": a failing endpoint's next probe is due at once.

    Args:
        org (str):
        endpoint_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | ProbeEndpointResponse202
    """

    return (
        await asyncio_detailed(
            org=org,
            endpoint_id=endpoint_id,
            client=client,
        )
    ).parsed
