"""The hand-written layer over the generated client (everything else in this package is
generated from docs/openapi.yaml by scripts/generate-clients.sh): what a generator cannot say.

An answer that is not a success becomes a typed exception carrying the API's message, 412
`Lead has changed` its own class with the current ETag, and the lead list and the events feed
are followed to their end by their cursors.
"""

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from .api.leads import list_events, list_leads
from .client import AuthenticatedClient
from .models.error import Error
from .types import UNSET, Response, Unset

T = TypeVar("T")


class ApiError(Exception):
    """An answer of the API that is not a success: its status and its message."""

    def __init__(self, status: int, message: str):
        super().__init__(f"{message} ({status})")
        self.status = status
        self.message = message


class LeadChanged(ApiError):
    """412 `Lead has changed`: `If-Match` named another revision; nothing was written."""

    def __init__(self, message: str, etag: str | None):
        super().__init__(412, message)
        self.etag = etag


def connect(base_url: str, token: str) -> AuthenticatedClient:
    """A client for the public API with an org token (`qlf_org_...`)."""
    return AuthenticatedClient(base_url=base_url, token=token)


def unwrap(response: Response[Any]) -> Any:
    """The parsed body of a successful answer; the API's error raised otherwise."""
    status = int(response.status_code)
    if 200 <= status < 300:
        return response.parsed
    message = (
        response.parsed.error
        if isinstance(response.parsed, Error)
        else response.content.decode("utf-8", "replace")
    )
    if status == 412:
        raise LeadChanged(message, response.headers.get("etag"))
    raise ApiError(status, message)


def all_leads(client: AuthenticatedClient, updated_since: str | Unset = UNSET) -> Iterator[Any]:
    """Every lead of the org (updated since `updated_since`, when given), page after page."""
    cursor: str | Unset = UNSET
    while True:
        page = unwrap(
            list_leads.sync_detailed(
                client=client, updated_since=updated_since, limit=500, cursor=cursor
            )
        )
        yield from page.leads
        if not isinstance(page.next_cursor, str):
            return
        cursor = page.next_cursor


@dataclass
class FeedPosition:
    """Where a walk of the feed is: after `cursor` (the start when None)."""

    cursor: str | None = None


def feed(client: AuthenticatedClient, position: FeedPosition | None = None) -> Iterator[Any]:
    """The feed's events after `position.cursor`, page after page up to its end; `position`
    then holds the cursor to resume from later."""
    position = position or FeedPosition()
    while True:
        page = unwrap(
            list_events.sync_detailed(
                client=client,
                after=position.cursor if position.cursor is not None else UNSET,
                limit=500,
            )
        )
        position.cursor = page.next_cursor
        if not page.events:
            return
        yield from page.events
