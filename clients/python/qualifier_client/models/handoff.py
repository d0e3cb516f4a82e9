from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.handoff_state import HandoffState

T = TypeVar("T", bound="Handoff")


@_attrs_define
class Handoff:
    """
    Attributes:
        id (UUID):
        lead_id (UUID):
        state (HandoffState):
        reason (None | str):
        operator (None | str):
        requested_at (str): UTC, millisecond precision.
        accepted_at (None | str):
        released_at (None | str):
    """

    id: UUID
    lead_id: UUID
    state: HandoffState
    reason: None | str
    operator: None | str
    requested_at: str
    accepted_at: None | str
    released_at: None | str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = str(self.id)

        lead_id = str(self.lead_id)

        state = self.state.value

        reason: None | str
        reason = self.reason

        operator: None | str
        operator = self.operator

        requested_at = self.requested_at

        accepted_at: None | str
        accepted_at = self.accepted_at

        released_at: None | str
        released_at = self.released_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "lead_id": lead_id,
                "state": state,
                "reason": reason,
                "operator": operator,
                "requested_at": requested_at,
                "accepted_at": accepted_at,
                "released_at": released_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = UUID(d.pop("id"))

        lead_id = UUID(d.pop("lead_id"))

        state = HandoffState(d.pop("state"))

        def _parse_reason(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        reason = _parse_reason(d.pop("reason"))

        def _parse_operator(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        operator = _parse_operator(d.pop("operator"))

        requested_at = d.pop("requested_at")

        def _parse_accepted_at(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        accepted_at = _parse_accepted_at(d.pop("accepted_at"))

        def _parse_released_at(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        released_at = _parse_released_at(d.pop("released_at"))

        handoff = cls(
            id=id,
            lead_id=lead_id,
            state=state,
            reason=reason,
            operator=operator,
            requested_at=requested_at,
            accepted_at=accepted_at,
            released_at=released_at,
        )

        handoff.additional_properties = d
        return handoff

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
