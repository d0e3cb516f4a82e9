from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.event_type import EventType
from ..models.ordering import Ordering
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.destination import Destination
    from ..models.endpoint_health import EndpointHealth
    from ..models.receiver_auth import ReceiverAuth
    from ..models.receiver_header import ReceiverHeader
    from ..models.webhook_client_certificate_type_1 import WebhookClientCertificateType1
    from ..models.webhook_filter_type_0 import WebhookFilterType0


T = TypeVar("T", bound="Webhook")


@_attrs_define
class Webhook:
    """An endpoint (the `webhook` routes show the org's primary one, its oldest). Its signing secret is never shown again
    after its creation or rotation.

        Attributes:
            id (UUID):
            description (str):
            url (None | str): `null` for a destination other than `https`.
            destination (Destination): Where the endpoint sends (docs/destinations.md). `https` (the default when absent):
                to `url`. `amqp`: a persistent message on a RabbitMQ exchange of the receiver's, confirmed by the broker. `sqs`:
                `SendMessage` to a queue (a FIFO queue, whose url ends in `.fifo`, groups by the lead and deduplicates by the
                delivery id). `eventbridge`: `PutEvents` with the envelope as `Detail` and the event type as `DetailType`. `s3`:
                one object per delivery at `{prefix}{org_id}/{yyyy}/{mm}/{dd}/{event_id}.json`. Every type carries the webhook's
                body bytes and the signature and delivery headers (as AMQP headers, message attributes or object metadata;
                EventBridge: the envelope only). Addresses (`url`, `endpoint_url`) are held to the endpoint url's rules;
                `amqp://` without TLS is refused outside `QUALIFIER_WEBHOOK_ALLOW_CIDRS`. Secrets (the amqp url's password, the
                AWS `credentials`) are sealed at rest and shown as `********`; sent back so, they keep the stored ones. Headers
                and `auth` are for `https` only. 422 naming the field.
            event_types (list[EventType]):
            enabled (bool):
            created_at (str): UTC, millisecond precision.
            updated_at (str): UTC, millisecond precision.
            max_per_second (int | None): A throttle (docs/delivery.md, "Throttle and order"): the endpoint receives at most
                this many requests in any one-second window, plus one, across every webhook-delivery replica (deliveries,
                replays, test events and probes together). Waiting for it spends no attempt, is not a failure and does not count
                towards the endpoint's health; deliveries wait in the order their events occurred, and a new value applies to
                those already waiting within a second. `null` (the default): no throttle. Anything else: 422 naming
                `max_per_second`.
            ordering (Ordering): `none` (the default): each delivery goes as soon as it can, so a retried event may arrive
                after a later one of its lead. `per_lead`: one lead's deliveries go one at a time in the order the events
                occurred; a delivery waits (without spending an attempt) while an earlier delivery of its lead is pending,
                retrying or held, and goes once that one succeeded, went dead or was skipped. Leads never wait for each other.
                Replays and test events are sent outside the order. Anything else: 422 naming `ordering`.
            headers (list[ReceiverHeader] | Unset):
            auth (None | ReceiverAuth | Unset):
            filter_ (None | Unset | WebhookFilterType0): The endpoint's filter as saved; `null` none.
            filtered_last_24h (int | Unset): Events the filter left out in the current hour and the 23 before it (with
                `health`).
            client_certificate (None | Unset | WebhookClientCertificateType1): The client certificate presented to the
                endpoint (mutual TLS), never its key; `null` when none is set.
            health (EndpointHealth | Unset): The endpoint's health (docs/delivery.md, "Endpoint health"). `failing`:
                deliveries wait without using attempts while probes (test events marked `X-Qualifier-Probe: true`) run at
                growing intervals; the first 2xx makes it `healthy` and everything that waited is sent, oldest first.
                `disabled`: failing for `QUALIFIER_ENDPOINT_DISABLE_AFTER_S` or answered `410 Gone`; `enabled` is false until a
                PUT with `enabled: true`. `last_success_at` is the success that last ended a run of failures (a clean endpoint's
                successes are not written, to keep the hot path free).
    """

    id: UUID
    description: str
    url: None | str
    destination: Destination
    event_types: list[EventType]
    enabled: bool
    created_at: str
    updated_at: str
    max_per_second: int | None
    ordering: Ordering
    headers: list[ReceiverHeader] | Unset = UNSET
    auth: None | ReceiverAuth | Unset = UNSET
    filter_: None | Unset | WebhookFilterType0 = UNSET
    filtered_last_24h: int | Unset = UNSET
    client_certificate: None | Unset | WebhookClientCertificateType1 = UNSET
    health: EndpointHealth | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.receiver_auth import ReceiverAuth  # noqa: PLC0415
        from ..models.webhook_client_certificate_type_1 import WebhookClientCertificateType1  # noqa: PLC0415
        from ..models.webhook_filter_type_0 import WebhookFilterType0  # noqa: PLC0415

        id = str(self.id)

        description = self.description

        url: None | str
        url = self.url

        destination = self.destination.to_dict()

        event_types = []
        for event_types_item_data in self.event_types:
            event_types_item = event_types_item_data.value
            event_types.append(event_types_item)

        enabled = self.enabled

        created_at = self.created_at

        updated_at = self.updated_at

        max_per_second: int | None
        max_per_second = self.max_per_second

        ordering = self.ordering.value

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
        elif isinstance(self.filter_, WebhookFilterType0):
            filter_ = self.filter_.to_dict()
        else:
            filter_ = self.filter_

        filtered_last_24h = self.filtered_last_24h

        client_certificate: dict[str, Any] | None | Unset
        if isinstance(self.client_certificate, Unset):
            client_certificate = UNSET
        elif isinstance(self.client_certificate, WebhookClientCertificateType1):
            client_certificate = self.client_certificate.to_dict()
        else:
            client_certificate = self.client_certificate

        health: dict[str, Any] | Unset = UNSET
        if not isinstance(self.health, Unset):
            health = self.health.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "description": description,
                "url": url,
                "destination": destination,
                "event_types": event_types,
                "enabled": enabled,
                "created_at": created_at,
                "updated_at": updated_at,
                "max_per_second": max_per_second,
                "ordering": ordering,
            }
        )
        if headers is not UNSET:
            field_dict["headers"] = headers
        if auth is not UNSET:
            field_dict["auth"] = auth
        if filter_ is not UNSET:
            field_dict["filter"] = filter_
        if filtered_last_24h is not UNSET:
            field_dict["filtered_last_24h"] = filtered_last_24h
        if client_certificate is not UNSET:
            field_dict["client_certificate"] = client_certificate
        if health is not UNSET:
            field_dict["health"] = health

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.destination import Destination  # noqa: PLC0415
        from ..models.endpoint_health import EndpointHealth  # noqa: PLC0415
        from ..models.receiver_auth import ReceiverAuth  # noqa: PLC0415
        from ..models.receiver_header import ReceiverHeader  # noqa: PLC0415
        from ..models.webhook_client_certificate_type_1 import WebhookClientCertificateType1  # noqa: PLC0415
        from ..models.webhook_filter_type_0 import WebhookFilterType0  # noqa: PLC0415

        d = dict(src_dict)
        id = UUID(d.pop("id"))

        description = d.pop("description")

        def _parse_url(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        url = _parse_url(d.pop("url"))

        destination = Destination.from_dict(d.pop("destination"))

        event_types = []
        _event_types = d.pop("event_types")
        for event_types_item_data in _event_types:
            event_types_item = EventType(event_types_item_data)

            event_types.append(event_types_item)

        enabled = d.pop("enabled")

        created_at = d.pop("created_at")

        updated_at = d.pop("updated_at")

        def _parse_max_per_second(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        max_per_second = _parse_max_per_second(d.pop("max_per_second"))

        ordering = Ordering(d.pop("ordering"))

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

        def _parse_filter_(data: object) -> None | Unset | WebhookFilterType0:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                filter_type_0 = WebhookFilterType0.from_dict(data)

                return filter_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | WebhookFilterType0, data)

        filter_ = _parse_filter_(d.pop("filter", UNSET))

        filtered_last_24h = d.pop("filtered_last_24h", UNSET)

        def _parse_client_certificate(data: object) -> None | Unset | WebhookClientCertificateType1:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                client_certificate_type_1 = WebhookClientCertificateType1.from_dict(data)

                return client_certificate_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | WebhookClientCertificateType1, data)

        client_certificate = _parse_client_certificate(d.pop("client_certificate", UNSET))

        _health = d.pop("health", UNSET)
        health: EndpointHealth | Unset
        if isinstance(_health, Unset):
            health = UNSET
        else:
            health = EndpointHealth.from_dict(_health)

        webhook = cls(
            id=id,
            description=description,
            url=url,
            destination=destination,
            event_types=event_types,
            enabled=enabled,
            created_at=created_at,
            updated_at=updated_at,
            max_per_second=max_per_second,
            ordering=ordering,
            headers=headers,
            auth=auth,
            filter_=filter_,
            filtered_last_24h=filtered_last_24h,
            client_certificate=client_certificate,
            health=health,
        )

        webhook.additional_properties = d
        return webhook

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
