from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.rotate_endpoint_secret_body import RotateEndpointSecretBody
from ...models.rotate_endpoint_secret_response_200 import RotateEndpointSecretResponse200
from ...types import UNSET, Response, Unset


def _get_kwargs(
    org: str,
    endpoint_id: str,
    *,
    body: RotateEndpointSecretBody | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/internal/v1/orgs/{org}/endpoints/{endpoint_id}/rotate-secret".format(
            org=quote(str(org), safe=""),
            endpoint_id=quote(str(endpoint_id), safe=""),
        ),
    }

    if not isinstance(body, Unset):
        _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | RotateEndpointSecretResponse200 | None:
    if response.status_code == 200:
        response_200 = RotateEndpointSecretResponse200.from_dict(response.json())

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
) -> Response[Error | RotateEndpointSecretResponse200]:
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
    body: RotateEndpointSecretBody | Unset = UNSET,
) -> Response[Error | RotateEndpointSecretResponse200]:
    """A new signing secret for this endpoint, as `…/webhook/rotate-secret` does for the primary.

    Args:
        org (str):
        endpoint_id (str):
        body (RotateEndpointSecretBody | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | RotateEndpointSecretResponse200]
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
    body: RotateEndpointSecretBody | Unset = UNSET,
) -> Error | RotateEndpointSecretResponse200 | None:
    """A new signing secret for this endpoint, as `…/webhook/rotate-secret` does for the primary.

    Args:
        org (str):
        endpoint_id (str):
        body (RotateEndpointSecretBody | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | RotateEndpointSecretResponse200
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
    body: RotateEndpointSecretBody | Unset = UNSET,
) -> Response[Error | RotateEndpointSecretResponse200]:
    """A new signing secret for this endpoint, as `…/webhook/rotate-secret` does for the primary.

    Args:
        org (str):
        endpoint_id (str):
        body (RotateEndpointSecretBody | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | RotateEndpointSecretResponse200]
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
    body: RotateEndpointSecretBody | Unset = UNSET,
) -> Error | RotateEndpointSecretResponse200 | None:
    """A new signing secret for this endpoint, as `…/webhook/rotate-secret` does for the primary.

    Args:
        org (str):
        endpoint_id (str):
        body (RotateEndpointSecretBody | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | RotateEndpointSecretResponse200
    """

    return (
        await asyncio_detailed(
            org=org,
            endpoint_id=endpoint_id,
            client=client,
            body=body,
        )
    ).parsed
