from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.handoff import Handoff
    from ..models.lead import Lead


T = TypeVar("T", bound="EventHandoffCreatedData")


@_attrs_define
class EventHandoffCreatedData:
    """Properties not listed here may be added; ignore the ones you do not know.

    Attributes:
        lead (Lead): Properties not listed here may be added; ignore the ones you do not know.
        handoff (Handoff):
    """

    lead: Lead
    handoff: Handoff
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        lead = self.lead.to_dict()

        handoff = self.handoff.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "lead": lead,
                "handoff": handoff,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.handoff import Handoff  # noqa: PLC0415
        from ..models.lead import Lead  # noqa: PLC0415

        d = dict(src_dict)
        lead = Lead.from_dict(d.pop("lead"))

        handoff = Handoff.from_dict(d.pop("handoff"))

        event_handoff_created_data = cls(
            lead=lead,
            handoff=handoff,
        )

        event_handoff_created_data.additional_properties = d
        return event_handoff_created_data

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
