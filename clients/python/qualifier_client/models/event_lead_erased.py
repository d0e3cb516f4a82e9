from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.event_lead_erased_data import EventLeadErasedData


T = TypeVar("T", bound="EventLeadErased")


@_attrs_define
class EventLeadErased:
    """The body of a `lead.erased` delivery (also docs/schemas/lead.erased.schema.json).

    Attributes:
        id (UUID):
        type_ (Literal['lead.erased']):
        version (Literal['1']):
        occurred_at (str): UTC, millisecond precision.
        org_id (UUID):
        data (EventLeadErasedData): Properties not listed here may be added; ignore the ones you do not know.
    """

    id: UUID
    type_: Literal["lead.erased"]
    version: Literal["1"]
    occurred_at: str
    org_id: UUID
    data: EventLeadErasedData

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
        from ..models.event_lead_erased_data import EventLeadErasedData  # noqa: PLC0415

        d = dict(src_dict)
        id = UUID(d.pop("id"))

        type_ = cast(Literal["lead.erased"], d.pop("type"))
        if type_ != "lead.erased":
            raise ValueError(f"type must match const 'lead.erased', got '{type_}'")

        version = cast(Literal["1"], d.pop("version"))
        if version != "1":
            raise ValueError(f"version must match const '1', got '{version}'")

        occurred_at = d.pop("occurred_at")

        org_id = UUID(d.pop("org_id"))

        data = EventLeadErasedData.from_dict(d.pop("data"))

        event_lead_erased = cls(
            id=id,
            type_=type_,
            version=version,
            occurred_at=occurred_at,
            org_id=org_id,
            data=data,
        )

        return event_lead_erased
