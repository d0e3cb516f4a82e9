from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define

from ..models.event_type import EventType

if TYPE_CHECKING:
    from ..models.erased_event_data import ErasedEventData


T = TypeVar("T", bound="ErasedEvent")


@_attrs_define
class ErasedEvent:
    """An event whose lead was erased, as the feed and the console show it: the envelope's own fields and the lead's id.

    Attributes:
        id (UUID):
        type_ (EventType):
        version (Literal['1']):
        occurred_at (str): UTC, millisecond precision.
        org_id (UUID):
        data (ErasedEventData):
        erased (bool):
    """

    id: UUID
    type_: EventType
    version: Literal["1"]
    occurred_at: str
    org_id: UUID
    data: ErasedEventData
    erased: bool

    def to_dict(self) -> dict[str, Any]:
        id = str(self.id)

        type_ = self.type_.value

        version = self.version

        occurred_at = self.occurred_at

        org_id = str(self.org_id)

        data = self.data.to_dict()

        erased = self.erased

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "id": id,
                "type": type_,
                "version": version,
                "occurred_at": occurred_at,
                "org_id": org_id,
                "data": data,
                "erased": erased,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.erased_event_data import ErasedEventData  # noqa: PLC0415

        d = dict(src_dict)
        id = UUID(d.pop("id"))

        type_ = EventType(d.pop("type"))

        version = cast(Literal["1"], d.pop("version"))
        if version != "1":
            raise ValueError(f"version must match const '1', got '{version}'")

        occurred_at = d.pop("occurred_at")

        org_id = UUID(d.pop("org_id"))

        data = ErasedEventData.from_dict(d.pop("data"))

        erased = d.pop("erased")

        erased_event = cls(
            id=id,
            type_=type_,
            version=version,
            occurred_at=occurred_at,
            org_id=org_id,
            data=data,
            erased=erased,
        )

        return erased_event
