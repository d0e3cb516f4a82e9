from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...types import Response


def _get_kwargs(
    lead_id: str,
) -> dict[str, Any]:
    _kwargs: dict[str, Any] = {
        "method": "delete",
        "url": "/api/v1/leads/{lead_id}".format(
            lead_id=quote(str(lead_id), safe=""),
        ),
    }

    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Any | Error | None:
    if response.status_code == 204:
        response_204 = cast(Any, None)
        return response_204

    if response.status_code == 401:
        response_401 = Error.from_dict(response.json())

        return response_401

    if response.status_code == 404:
        response_404 = Error.from_dict(response.json())

        return response_404

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Any | Error]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    lead_id: str,
    *,
    client: AuthenticatedClient,
) -> Response[Any | Error]:
    """Erase the contact (the right to be forgotten).

     In one transaction: the lead and its handoffs are deleted; every stored event about it
    keeps only its `id`, `type`, `version`, `occurred_at`, `org_id` and `data.lead.id`, with
    `"erased": true`; its deliveries that had not succeeded end `skipped` and are never sent;
    the receivers' answers and request headers leave its attempt logs; kept Idempotency-Key
    answers holding it are removed; and `lead.erased` is emitted. The phone is free
    afterwards. An unknown, another org's or an already erased lead is 404.

    Args:
        lead_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Error]
    """

    kwargs = _get_kwargs(
        lead_id=lead_id,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    lead_id: str,
    *,
    client: AuthenticatedClient,
) -> Any | Error | None:
    """Erase the contact (the right to be forgotten).

     In one transaction: the lead and its handoffs are deleted; every stored event about it
    keeps only its `id`, `type`, `version`, `occurred_at`, `org_id` and `data.lead.id`, with
    `"erased": true`; its deliveries that had not succeeded end `skipped` and are never sent;
    the receivers' answers and request headers leave its attempt logs; kept Idempotency-Key
    answers holding it are removed; and `lead.erased` is emitted. The phone is free
    afterwards. An unknown, another org's or an already erased lead is 404.

    Args:
        lead_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Error
    """

    return sync_detailed(
        lead_id=lead_id,
        client=client,
    ).parsed


async def asyncio_detailed(
    lead_id: str,
    *,
    client: AuthenticatedClient,
) -> Response[Any | Error]:
    """Erase the contact (the right to be forgotten).

     In one transaction: the lead and its handoffs are deleted; every stored event about it
    keeps only its `id`, `type`, `version`, `occurred_at`, `org_id` and `data.lead.id`, with
    `"erased": true`; its deliveries that had not succeeded end `skipped` and are never sent;
    the receivers' answers and request headers leave its attempt logs; kept Idempotency-Key
    answers holding it are removed; and `lead.erased` is emitted. The phone is free
    afterwards. An unknown, another org's or an already erased lead is 404.

    Args:
        lead_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Error]
    """

    kwargs = _get_kwargs(
        lead_id=lead_id,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    lead_id: str,
    *,
    client: AuthenticatedClient,
) -> Any | Error | None:
    """Erase the contact (the right to be forgotten).

     In one transaction: the lead and its handoffs are deleted; every stored event about it
    keeps only its `id`, `type`, `version`, `occurred_at`, `org_id` and `data.lead.id`, with
    `"erased": true`; its deliveries that had not succeeded end `skipped` and are never sent;
    the receivers' answers and request headers leave its attempt logs; kept Idempotency-Key
    answers holding it are removed; and `lead.erased` is emitted. The phone is free
    afterwards. An unknown, another org's or an already erased lead is 404.

    Args:
        lead_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Error
    """

    return (
        await asyncio_detailed(
            lead_id=lead_id,
            client=client,
        )
    ).parsed
