from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.lead_response import LeadResponse
from ...models.public_patch import PublicPatch
from ...types import UNSET, Response, Unset


def _get_kwargs(
    lead_id: str,
    *,
    body: PublicPatch,
    idempotency_key: str | Unset = UNSET,
    if_match: str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(idempotency_key, Unset):
        headers["Idempotency-Key"] = idempotency_key

    if not isinstance(if_match, Unset):
        headers["If-Match"] = if_match

    _kwargs: dict[str, Any] = {
        "method": "patch",
        "url": "/api/v1/leads/{lead_id}".format(
            lead_id=quote(str(lead_id), safe=""),
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

    if response.status_code == 412:
        response_412 = Error.from_dict(response.json())

        return response_412

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
) -> Response[Error | LeadResponse]:
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
    body: PublicPatch,
    idempotency_key: str | Unset = UNSET,
    if_match: str | Unset = UNSET,
) -> Response[Error | LeadResponse]:
    """Write back from the CRM (`external_ref`, `ai_paused`) or close the lead.

     `status: closed` emits `lead.stage_changed` only when the stage changes. `external_ref` and
    `ai_paused` emit nothing, so a CRM's write-back never echoes back to it. Every change
    raises the lead's `revision` by one; a request that changes nothing leaves it. With
    `If-Match`, the change is made only if the lead is at one of the named revisions (`*`:
    any); otherwise 412 and nothing is written.

    Args:
        lead_id (str):
        idempotency_key (str | Unset):
        if_match (str | Unset):
        body (PublicPatch): At least one of the three fields, not all null.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | LeadResponse]
    """

    kwargs = _get_kwargs(
        lead_id=lead_id,
        body=body,
        idempotency_key=idempotency_key,
        if_match=if_match,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    lead_id: str,
    *,
    client: AuthenticatedClient,
    body: PublicPatch,
    idempotency_key: str | Unset = UNSET,
    if_match: str | Unset = UNSET,
) -> Error | LeadResponse | None:
    """Write back from the CRM (`external_ref`, `ai_paused`) or close the lead.

     `status: closed` emits `lead.stage_changed` only when the stage changes. `external_ref` and
    `ai_paused` emit nothing, so a CRM's write-back never echoes back to it. Every change
    raises the lead's `revision` by one; a request that changes nothing leaves it. With
    `If-Match`, the change is made only if the lead is at one of the named revisions (`*`:
    any); otherwise 412 and nothing is written.

    Args:
        lead_id (str):
        idempotency_key (str | Unset):
        if_match (str | Unset):
        body (PublicPatch): At least one of the three fields, not all null.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | LeadResponse
    """

    return sync_detailed(
        lead_id=lead_id,
        client=client,
        body=body,
        idempotency_key=idempotency_key,
        if_match=if_match,
    ).parsed


async def asyncio_detailed(
    lead_id: str,
    *,
    client: AuthenticatedClient,
    body: PublicPatch,
    idempotency_key: str | Unset = UNSET,
    if_match: str | Unset = UNSET,
) -> Response[Error | LeadResponse]:
    """Write back from the CRM (`external_ref`, `ai_paused`) or close the lead.

     `status: closed` emits `lead.stage_changed` only when the stage changes. `external_ref` and
    `ai_paused` emit nothing, so a CRM's write-back never echoes back to it. Every change
    raises the lead's `revision` by one; a request that changes nothing leaves it. With
    `If-Match`, the change is made only if the lead is at one of the named revisions (`*`:
    any); otherwise 412 and nothing is written.

    Args:
        lead_id (str):
        idempotency_key (str | Unset):
        if_match (str | Unset):
        body (PublicPatch): At least one of the three fields, not all null.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | LeadResponse]
    """

    kwargs = _get_kwargs(
        lead_id=lead_id,
        body=body,
        idempotency_key=idempotency_key,
        if_match=if_match,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    lead_id: str,
    *,
    client: AuthenticatedClient,
    body: PublicPatch,
    idempotency_key: str | Unset = UNSET,
    if_match: str | Unset = UNSET,
) -> Error | LeadResponse | None:
    """Write back from the CRM (`external_ref`, `ai_paused`) or close the lead.

     `status: closed` emits `lead.stage_changed` only when the stage changes. `external_ref` and
    `ai_paused` emit nothing, so a CRM's write-back never echoes back to it. Every change
    raises the lead's `revision` by one; a request that changes nothing leaves it. With
    `If-Match`, the change is made only if the lead is at one of the named revisions (`*`:
    any); otherwise 412 and nothing is written.

    Args:
        lead_id (str):
        idempotency_key (str | Unset):
        if_match (str | Unset):
        body (PublicPatch): At least one of the three fields, not all null.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | LeadResponse
    """

    return (
        await asyncio_detailed(
            lead_id=lead_id,
            client=client,
            body=body,
            idempotency_key=idempotency_key,
            if_match=if_match,
        )
    ).parsed
