from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.send_test_event_body import SendTestEventBody
from ...models.send_test_event_response_202 import SendTestEventResponse202
from ...types import UNSET, Response, Unset


def _get_kwargs(
    org: str,
    *,
    body: SendTestEventBody | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/internal/v1/orgs/{org}/webhook/test".format(
            org=quote(str(org), safe=""),
        ),
    }

    if not isinstance(body, Unset):
        _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | SendTestEventResponse202 | None:
    if response.status_code == 202:
        response_202 = SendTestEventResponse202.from_dict(response.json())

        return response_202

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
) -> Response[Error | SendTestEventResponse202]:
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
    body: SendTestEventBody | Unset = UNSET,
) -> Response[Error | SendTestEventResponse202]:
    """Send a signed example event through the normal pipeline.

     Same headers, signatures, retries and delivery log as any delivery, plus `X-Qualifier-Test: true`.
    The example lead's id is the nil UUID; handoff examples carry an example `handoff`. Sent even to a
    type the webhook is not subscribed to. At most 10 a minute per org, API and console together (429
    `Rate limit exceeded` with `Retry-After`). While the endpoint is failing, a test event is sent at
    once and its answer counts as a probe (a 2xx makes the endpoint healthy).

    Args:
        org (str):
        body (SendTestEventBody | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | SendTestEventResponse202]
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
    body: SendTestEventBody | Unset = UNSET,
) -> Error | SendTestEventResponse202 | None:
    """Send a signed example event through the normal pipeline.

     Same headers, signatures, retries and delivery log as any delivery, plus `X-Qualifier-Test: true`.
    The example lead's id is the nil UUID; handoff examples carry an example `handoff`. Sent even to a
    type the webhook is not subscribed to. At most 10 a minute per org, API and console together (429
    `Rate limit exceeded` with `Retry-After`). While the endpoint is failing, a test event is sent at
    once and its answer counts as a probe (a 2xx makes the endpoint healthy).

    Args:
        org (str):
        body (SendTestEventBody | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | SendTestEventResponse202
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
    body: SendTestEventBody | Unset = UNSET,
) -> Response[Error | SendTestEventResponse202]:
    """Send a signed example event through the normal pipeline.

     Same headers, signatures, retries and delivery log as any delivery, plus `X-Qualifier-Test: true`.
    The example lead's id is the nil UUID; handoff examples carry an example `handoff`. Sent even to a
    type the webhook is not subscribed to. At most 10 a minute per org, API and console together (429
    `Rate limit exceeded` with `Retry-After`). While the endpoint is failing, a test event is sent at
    once and its answer counts as a probe (a 2xx makes the endpoint healthy).

    Args:
        org (str):
        body (SendTestEventBody | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | SendTestEventResponse202]
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
    body: SendTestEventBody | Unset = UNSET,
) -> Error | SendTestEventResponse202 | None:
    """Send a signed example event through the normal pipeline.

     Same headers, signatures, retries and delivery log as any delivery, plus `X-Qualifier-Test: true`.
    The example lead's id is the nil UUID; handoff examples carry an example `handoff`. Sent even to a
    type the webhook is not subscribed to. At most 10 a minute per org, API and console together (429
    `Rate limit exceeded` with `Retry-After`). While the endpoint is failing, a test event is sent at
    once and its answer counts as a probe (a 2xx makes the endpoint healthy).

    Args:
        org (str):
        body (SendTestEventBody | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | SendTestEventResponse202
    """

    return (
        await asyncio_detailed(
            org=org,
            client=client,
            body=body,
        )
    ).parsed
