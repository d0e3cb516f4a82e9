from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.delivery_status import DeliveryStatus
from ..models.delivery_waiting_for import DeliveryWaitingFor
from ..models.event_type import EventType
from ..types import UNSET, Unset

T = TypeVar("T", bound="Delivery")


@_attrs_define
class Delivery:
    """
    Attributes:
        id (UUID): The `X-Qualifier-Delivery` header value: one per event and endpoint.
        endpoint_id (UUID): The endpoint it goes to.
        event_id (UUID):
        event_type (EventType):
        status (DeliveryStatus):
        attempts (int):
        last_status_code (int | None):
        last_error (None | str):
        created_at (str): UTC, millisecond precision.
        updated_at (str): UTC, millisecond precision.
        erased (bool | Unset): Present when the event's lead was erased: its payload is the reduced envelope and it is
            never sent again.
        waiting_for (DeliveryWaitingFor | Unset): Present while a delivery that is neither finished nor retrying waits:
            `throttle`, for its turn under the endpoint's `max_per_second`; `earlier_delivery`, for an earlier delivery of
            its lead (`ordering: per_lead`). Neither spends an attempt.
    """

    id: UUID
    endpoint_id: UUID
    event_id: UUID
    event_type: EventType
    status: DeliveryStatus
    attempts: int
    last_status_code: int | None
    last_error: None | str
    created_at: str
    updated_at: str
    erased: bool | Unset = UNSET
    waiting_for: DeliveryWaitingFor | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = str(self.id)

        endpoint_id = str(self.endpoint_id)

        event_id = str(self.event_id)

        event_type = self.event_type.value

        status = self.status.value

        attempts = self.attempts

        last_status_code: int | None
        last_status_code = self.last_status_code

        last_error: None | str
        last_error = self.last_error

        created_at = self.created_at

        updated_at = self.updated_at

        erased = self.erased

        waiting_for: str | Unset = UNSET
        if not isinstance(self.waiting_for, Unset):
            waiting_for = self.waiting_for.value

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "endpoint_id": endpoint_id,
                "event_id": event_id,
                "event_type": event_type,
                "status": status,
                "attempts": attempts,
                "last_status_code": last_status_code,
                "last_error": last_error,
                "created_at": created_at,
                "updated_at": updated_at,
            }
        )
        if erased is not UNSET:
            field_dict["erased"] = erased
        if waiting_for is not UNSET:
            field_dict["waiting_for"] = waiting_for

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = UUID(d.pop("id"))

        endpoint_id = UUID(d.pop("endpoint_id"))

        event_id = UUID(d.pop("event_id"))

        event_type = EventType(d.pop("event_type"))

        status = DeliveryStatus(d.pop("status"))

        attempts = d.pop("attempts")

        def _parse_last_status_code(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        last_status_code = _parse_last_status_code(d.pop("last_status_code"))

        def _parse_last_error(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        last_error = _parse_last_error(d.pop("last_error"))

        created_at = d.pop("created_at")

        updated_at = d.pop("updated_at")

        erased = d.pop("erased", UNSET)

        _waiting_for = d.pop("waiting_for", UNSET)
        waiting_for: DeliveryWaitingFor | Unset
        if isinstance(_waiting_for, Unset):
            waiting_for = UNSET
        else:
            waiting_for = DeliveryWaitingFor(_waiting_for)

        delivery = cls(
            id=id,
            endpoint_id=endpoint_id,
            event_id=event_id,
            event_type=event_type,
            status=status,
            attempts=attempts,
            last_status_code=last_status_code,
            last_error=last_error,
            created_at=created_at,
            updated_at=updated_at,
            erased=erased,
            waiting_for=waiting_for,
        )

        delivery.additional_properties = d
        return delivery

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
