from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.event_lead_qualified_data import EventLeadQualifiedData


T = TypeVar("T", bound="EventLeadQualified")


@_attrs_define
class EventLeadQualified:
    """The body of a `lead.qualified` delivery (also docs/schemas/lead.qualified.schema.json).

    Attributes:
        id (UUID):
        type_ (Literal['lead.qualified']):
        version (Literal['1']):
        occurred_at (str): UTC, millisecond precision.
        org_id (UUID):
        data (EventLeadQualifiedData): Properties not listed here may be added; ignore the ones you do not know.
    """

    id: UUID
    type_: Literal["lead.qualified"]
    version: Literal["1"]
    occurred_at: str
    org_id: UUID
    data: EventLeadQualifiedData

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
        from ..models.event_lead_qualified_data import EventLeadQualifiedData  # noqa: PLC0415

        d = dict(src_dict)
        id = UUID(d.pop("id"))

        type_ = cast(Literal["lead.qualified"], d.pop("type"))
        if type_ != "lead.qualified":
            raise ValueError(f"type must match const 'lead.qualified', got '{type_}'")

        version = cast(Literal["1"], d.pop("version"))
        if version != "1":
            raise ValueError(f"version must match const '1', got '{version}'")

        occurred_at = d.pop("occurred_at")

        org_id = UUID(d.pop("org_id"))

        data = EventLeadQualifiedData.from_dict(d.pop("data"))

        event_lead_qualified = cls(
            id=id,
            type_=type_,
            version=version,
            occurred_at=occurred_at,
            org_id=org_id,
            data=data,
        )

        return event_lead_qualified
