from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.event_type import EventType
from ..models.replay_deliveries_body_status_item import ReplayDeliveriesBodyStatusItem
from ..types import UNSET, Unset

T = TypeVar("T", bound="ReplayDeliveriesBody")


@_attrs_define
class ReplayDeliveriesBody:
    """
    Attributes:
        status (list[ReplayDeliveriesBodyStatusItem] | Unset):
        since (str | Unset): Created at or after.
        until (str | Unset): Created before.
        event_types (list[EventType] | Unset):
        lead_id (UUID | Unset):
        dry_run (bool | Unset):  Default: False.
    """

    status: list[ReplayDeliveriesBodyStatusItem] | Unset = UNSET
    since: str | Unset = UNSET
    until: str | Unset = UNSET
    event_types: list[EventType] | Unset = UNSET
    lead_id: UUID | Unset = UNSET
    dry_run: bool | Unset = False
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        status: list[str] | Unset = UNSET
        if not isinstance(self.status, Unset):
            status = []
            for status_item_data in self.status:
                status_item = status_item_data.value
                status.append(status_item)

        since = self.since

        until = self.until

        event_types: list[str] | Unset = UNSET
        if not isinstance(self.event_types, Unset):
            event_types = []
            for event_types_item_data in self.event_types:
                event_types_item = event_types_item_data.value
                event_types.append(event_types_item)

        lead_id: str | Unset = UNSET
        if not isinstance(self.lead_id, Unset):
            lead_id = str(self.lead_id)

        dry_run = self.dry_run

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if status is not UNSET:
            field_dict["status"] = status
        if since is not UNSET:
            field_dict["since"] = since
        if until is not UNSET:
            field_dict["until"] = until
        if event_types is not UNSET:
            field_dict["event_types"] = event_types
        if lead_id is not UNSET:
            field_dict["lead_id"] = lead_id
        if dry_run is not UNSET:
            field_dict["dry_run"] = dry_run

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        _status = d.pop("status", UNSET)
        status: list[ReplayDeliveriesBodyStatusItem] | Unset = UNSET
        if _status is not UNSET:
            status = []
            for status_item_data in _status:
                status_item = ReplayDeliveriesBodyStatusItem(status_item_data)

                status.append(status_item)

        since = d.pop("since", UNSET)

        until = d.pop("until", UNSET)

        _event_types = d.pop("event_types", UNSET)
        event_types: list[EventType] | Unset = UNSET
        if _event_types is not UNSET:
            event_types = []
            for event_types_item_data in _event_types:
                event_types_item = EventType(event_types_item_data)

                event_types.append(event_types_item)

        _lead_id = d.pop("lead_id", UNSET)
        lead_id: UUID | Unset
        if isinstance(_lead_id, Unset):
            lead_id = UNSET
        else:
            lead_id = UUID(_lead_id)

        dry_run = d.pop("dry_run", UNSET)

        replay_deliveries_body = cls(
            status=status,
            since=since,
            until=until,
            event_types=event_types,
            lead_id=lead_id,
            dry_run=dry_run,
        )

        replay_deliveries_body.additional_properties = d
        return replay_deliveries_body

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
