from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.event_type import EventType
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.endpoint_health import EndpointHealth


T = TypeVar("T", bound="Webhook")


@_attrs_define
class Webhook:
    """
    Attributes:
        url (str):
        event_types (list[EventType]):
        enabled (bool):
        created_at (str): UTC, millisecond precision.
        updated_at (str): UTC, millisecond precision.
        health (EndpointHealth | Unset): The endpoint's health (docs/delivery.md, "Endpoint health"). `failing`:
            deliveries wait without using attempts while probes (test events marked `X-Qualifier-Probe: true`) run at
            growing intervals; the first 2xx makes it `healthy` and everything that waited is sent, oldest first.
            `disabled`: failing for `QUALIFIER_ENDPOINT_DISABLE_AFTER_S` or answered `410 Gone`; `enabled` is false until a
            PUT with `enabled: true`. `last_success_at` is the success that last ended a run of failures (a clean endpoint's
            successes are not written, to keep the hot path free).
    """

    url: str
    event_types: list[EventType]
    enabled: bool
    created_at: str
    updated_at: str
    health: EndpointHealth | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        url = self.url

        event_types = []
        for event_types_item_data in self.event_types:
            event_types_item = event_types_item_data.value
            event_types.append(event_types_item)

        enabled = self.enabled

        created_at = self.created_at

        updated_at = self.updated_at

        health: dict[str, Any] | Unset = UNSET
        if not isinstance(self.health, Unset):
            health = self.health.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "url": url,
                "event_types": event_types,
                "enabled": enabled,
                "created_at": created_at,
                "updated_at": updated_at,
            }
        )
        if health is not UNSET:
            field_dict["health"] = health

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.endpoint_health import EndpointHealth  # noqa: PLC0415

        d = dict(src_dict)
        url = d.pop("url")

        event_types = []
        _event_types = d.pop("event_types")
        for event_types_item_data in _event_types:
            event_types_item = EventType(event_types_item_data)

            event_types.append(event_types_item)

        enabled = d.pop("enabled")

        created_at = d.pop("created_at")

        updated_at = d.pop("updated_at")

        _health = d.pop("health", UNSET)
        health: EndpointHealth | Unset
        if isinstance(_health, Unset):
            health = UNSET
        else:
            health = EndpointHealth.from_dict(_health)

        webhook = cls(
            url=url,
            event_types=event_types,
            enabled=enabled,
            created_at=created_at,
            updated_at=updated_at,
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
