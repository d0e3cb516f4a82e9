from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.event_type import EventType
from ..models.ordering import Ordering
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.destination import Destination
    from ..models.receiver_auth import ReceiverAuth
    from ..models.receiver_header import ReceiverHeader
    from ..models.webhook_input_filter_type_0 import WebhookInputFilterType0


T = TypeVar("T", bound="WebhookInput")


@_attrs_define
class WebhookInput:
    """
    Attributes:
        event_types (list[EventType]):
        url (None | str | Unset): https only; every resolved address must be public. Required for an `https` destination
            (the default), absent or `null` for any other.
        enabled (bool | Unset):
        max_per_second (int | None | Unset): A throttle (docs/delivery.md, "Throttle and order"): the endpoint receives
            at most this many requests in any one-second window, plus one, across every webhook-delivery replica
            (deliveries, replays, test events and probes together). Waiting for it spends no attempt, is not a failure and
            does not count towards the endpoint's health; deliveries wait in the order their events occurred, and a new
            value applies to those already waiting within a second. `null` (the default): no throttle. Anything else: 422
            naming `max_per_second`.
        ordering (Ordering | Unset): `none` (the default): each delivery goes as soon as it can, so a retried event may
            arrive after a later one of its lead. `per_lead`: one lead's deliveries go one at a time in the order the events
            occurred; a delivery waits (without spending an attempt) while an earlier delivery of its lead is pending,
            retrying or held, and goes once that one succeeded, went dead or was skipped. Leads never wait for each other.
            Replays and test events are sent outside the order. Anything else: 422 naming `ordering`.
        description (str | Unset): An endpoint's note for its administrators (no control characters); absent keeps the
            saved one.
        headers (list[ReceiverHeader] | Unset): The receiver's own headers (docs/receivers.md, "Your own headers and
            credentials"), sent with every request to the endpoint; absent keeps the saved ones, `[]` removes them. A secret
            value given as `********` keeps the stored one. 422 naming the header.
        auth (None | ReceiverAuth | Unset): How requests authenticate to the receiver; absent keeps the saved auth,
            `null` removes it. A secret given as `********` keeps the stored one. 422 naming the field.
        filter_ (None | Unset | WebhookInputFilterType0): Which subscribed events the endpoint gets (docs/api.md,
            "Filters"): `null` every one, else a JSON object of dotted paths and operators matched against the event's
            envelope. Absent keeps the saved filter. 422 `Invalid filter at <path>: …`.
        destination (Destination | Unset): Where the endpoint sends (docs/destinations.md). `https` (the default when
            absent): to `url`. `amqp`: a persistent message on a RabbitMQ exchange of the receiver's, confirmed by the
            broker. `sqs`: `SendMessage` to a queue (a FIFO queue, whose url ends in `.fifo`, groups by the lead and
            deduplicates by the delivery id). `eventbridge`: `PutEvents` with the envelope as `Detail` and the event type as
            `DetailType`. `s3`: one object per delivery at `{prefix}{org_id}/{yyyy}/{mm}/{dd}/{event_id}.json`. Every type
            carries the webhook's body bytes and the signature and delivery headers (as AMQP headers, message attributes or
            object metadata; EventBridge: the envelope only). Addresses (`url`, `endpoint_url`) are held to the endpoint
            url's rules; `amqp://` without TLS is refused outside `QUALIFIER_WEBHOOK_ALLOW_CIDRS`. Secrets (the amqp url's
            password, the AWS `credentials`) are sealed at rest and shown as `********`; sent back so, they keep the stored
            ones. Headers and `auth` are for `https` only. 422 naming the field.
    """

    event_types: list[EventType]
    url: None | str | Unset = UNSET
    enabled: bool | Unset = UNSET
    max_per_second: int | None | Unset = UNSET
    ordering: Ordering | Unset = UNSET
    description: str | Unset = UNSET
    headers: list[ReceiverHeader] | Unset = UNSET
    auth: None | ReceiverAuth | Unset = UNSET
    filter_: None | Unset | WebhookInputFilterType0 = UNSET
    destination: Destination | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.receiver_auth import ReceiverAuth  # noqa: PLC0415
        from ..models.webhook_input_filter_type_0 import WebhookInputFilterType0  # noqa: PLC0415

        event_types = []
        for event_types_item_data in self.event_types:
            event_types_item = event_types_item_data.value
            event_types.append(event_types_item)

        url: None | str | Unset
        if isinstance(self.url, Unset):
            url = UNSET
        else:
            url = self.url

        enabled = self.enabled

        max_per_second: int | None | Unset
        if isinstance(self.max_per_second, Unset):
            max_per_second = UNSET
        else:
            max_per_second = self.max_per_second

        ordering: str | Unset = UNSET
        if not isinstance(self.ordering, Unset):
            ordering = self.ordering.value

        description = self.description

        headers: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.headers, Unset):
            headers = []
            for headers_item_data in self.headers:
                headers_item = headers_item_data.to_dict()
                headers.append(headers_item)

        auth: dict[str, Any] | None | Unset
        if isinstance(self.auth, Unset):
            auth = UNSET
        elif isinstance(self.auth, ReceiverAuth):
            auth = self.auth.to_dict()
        else:
            auth = self.auth

        filter_: dict[str, Any] | None | Unset
        if isinstance(self.filter_, Unset):
            filter_ = UNSET
        elif isinstance(self.filter_, WebhookInputFilterType0):
            filter_ = self.filter_.to_dict()
        else:
            filter_ = self.filter_

        destination: dict[str, Any] | Unset = UNSET
        if not isinstance(self.destination, Unset):
            destination = self.destination.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "event_types": event_types,
            }
        )
        if url is not UNSET:
            field_dict["url"] = url
        if enabled is not UNSET:
            field_dict["enabled"] = enabled
        if max_per_second is not UNSET:
            field_dict["max_per_second"] = max_per_second
        if ordering is not UNSET:
            field_dict["ordering"] = ordering
        if description is not UNSET:
            field_dict["description"] = description
        if headers is not UNSET:
            field_dict["headers"] = headers
        if auth is not UNSET:
            field_dict["auth"] = auth
        if filter_ is not UNSET:
            field_dict["filter"] = filter_
        if destination is not UNSET:
            field_dict["destination"] = destination

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.destination import Destination  # noqa: PLC0415
        from ..models.receiver_auth import ReceiverAuth  # noqa: PLC0415
        from ..models.receiver_header import ReceiverHeader  # noqa: PLC0415
        from ..models.webhook_input_filter_type_0 import WebhookInputFilterType0  # noqa: PLC0415

        d = dict(src_dict)
        event_types = []
        _event_types = d.pop("event_types")
        for event_types_item_data in _event_types:
            event_types_item = EventType(event_types_item_data)

            event_types.append(event_types_item)

        def _parse_url(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        url = _parse_url(d.pop("url", UNSET))

        enabled = d.pop("enabled", UNSET)

        def _parse_max_per_second(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_per_second = _parse_max_per_second(d.pop("max_per_second", UNSET))

        _ordering = d.pop("ordering", UNSET)
        ordering: Ordering | Unset
        if isinstance(_ordering, Unset):
            ordering = UNSET
        else:
            ordering = Ordering(_ordering)

        description = d.pop("description", UNSET)

        _headers = d.pop("headers", UNSET)
        headers: list[ReceiverHeader] | Unset = UNSET
        if _headers is not UNSET:
            headers = []
            for headers_item_data in _headers:
                headers_item = ReceiverHeader.from_dict(headers_item_data)

                headers.append(headers_item)

        def _parse_auth(data: object) -> None | ReceiverAuth | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                auth_type_1 = ReceiverAuth.from_dict(data)

                return auth_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | ReceiverAuth | Unset, data)

        auth = _parse_auth(d.pop("auth", UNSET))

        def _parse_filter_(data: object) -> None | Unset | WebhookInputFilterType0:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                filter_type_0 = WebhookInputFilterType0.from_dict(data)

                return filter_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | WebhookInputFilterType0, data)

        filter_ = _parse_filter_(d.pop("filter", UNSET))

        _destination = d.pop("destination", UNSET)
        destination: Destination | Unset
        if isinstance(_destination, Unset):
            destination = UNSET
        else:
            destination = Destination.from_dict(_destination)

        webhook_input = cls(
            event_types=event_types,
            url=url,
            enabled=enabled,
            max_per_second=max_per_second,
            ordering=ordering,
            description=description,
            headers=headers,
            auth=auth,
            filter_=filter_,
            destination=destination,
        )

        webhook_input.additional_properties = d
        return webhook_input

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
