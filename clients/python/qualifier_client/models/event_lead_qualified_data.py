from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.stage import Stage

if TYPE_CHECKING:
    from ..models.lead import Lead
    from ..models.lead_changes import LeadChanges


T = TypeVar("T", bound="EventLeadQualifiedData")


@_attrs_define
class EventLeadQualifiedData:
    """Properties not listed here may be added; ignore the ones you do not know.

    Attributes:
        lead (Lead): Properties not listed here may be added; ignore the ones you do not know.
        previous_stage (Stage):
        previous (LeadChanges): `data.previous`: the value before the change of every lead field the change altered. For
            `profile`, only the keys that changed, each with its previous value (`null` for a key the
            change added).
    """

    lead: Lead
    previous_stage: Stage
    previous: LeadChanges
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        lead = self.lead.to_dict()

        previous_stage = self.previous_stage.value

        previous = self.previous.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "lead": lead,
                "previous_stage": previous_stage,
                "previous": previous,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.lead import Lead  # noqa: PLC0415
        from ..models.lead_changes import LeadChanges  # noqa: PLC0415

        d = dict(src_dict)
        lead = Lead.from_dict(d.pop("lead"))

        previous_stage = Stage(d.pop("previous_stage"))

        previous = LeadChanges.from_dict(d.pop("previous"))

        event_lead_qualified_data = cls(
            lead=lead,
            previous_stage=previous_stage,
            previous=previous,
        )

        event_lead_qualified_data.additional_properties = d
        return event_lead_qualified_data

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
