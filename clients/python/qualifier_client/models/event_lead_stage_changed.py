from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.event_lead_stage_changed_data import EventLeadStageChangedData


T = TypeVar("T", bound="EventLeadStageChanged")


@_attrs_define
class EventLeadStageChanged:
    """The body of a `lead.stage_changed` delivery (also docs/schemas/lead.stage_changed.schema.json).

    Attributes:
        id (UUID):
        type_ (Literal['lead.stage_changed']):
        version (Literal['1']):
        occurred_at (str): UTC, millisecond precision.
        org_id (UUID):
        data (EventLeadStageChangedData): Properties not listed here may be added; ignore the ones you do not know.
    """

    id: UUID
    type_: Literal["lead.stage_changed"]
    version: Literal["1"]
    occurred_at: str
    org_id: UUID
    data: EventLeadStageChangedData

    def to_dict(self) -> dict[str, Any]:
        id = str(self.id)

        type_ = self.type_

        version = self.version

        occurred_at = self.occurred_at

        org_id = str(self.org_id)

        data = self.data.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "id": id,
                "type": type_,
                "version": version,
                "occurred_at": occurred_at,
                "org_id": org_id,
                "data": data,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.event_lead_stage_changed_data import EventLeadStageChangedData  # noqa: PLC0415

        d = dict(src_dict)
        id = UUID(d.pop("id"))

        type_ = cast(Literal["lead.stage_changed"], d.pop("type"))
        if type_ != "lead.stage_changed":
            raise ValueError(f"type must match const 'lead.stage_changed', got '{type_}'")

        version = cast(Literal["1"], d.pop("version"))
        if version != "1":
            raise ValueError(f"version must match const '1', got '{version}'")

        occurred_at = d.pop("occurred_at")

        org_id = UUID(d.pop("org_id"))

        data = EventLeadStageChangedData.from_dict(d.pop("data"))

        event_lead_stage_changed = cls(
            id=id,
            type_=type_,
            version=version,
            occurred_at=occurred_at,
            org_id=org_id,
            data=data,
        )

        return event_lead_stage_changed
