from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar
from uuid import UUID

from attrs import define as _attrs_define

T = TypeVar("T", bound="ErasedEventDataLead")


@_attrs_define
class ErasedEventDataLead:
    """
    Attributes:
        id (UUID):
    """

    id: UUID

    def to_dict(self) -> dict[str, Any]:
        id = str(self.id)

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "id": id,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = UUID(d.pop("id"))

        erased_event_data_lead = cls(
            id=id,
        )

        return erased_event_data_lead
