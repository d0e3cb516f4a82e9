from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.erased_event_data_lead import ErasedEventDataLead


T = TypeVar("T", bound="ErasedEventData")


@_attrs_define
class ErasedEventData:
    """
    Attributes:
        lead (ErasedEventDataLead):
    """

    lead: ErasedEventDataLead

    def to_dict(self) -> dict[str, Any]:
        lead = self.lead.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "lead": lead,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.erased_event_data_lead import ErasedEventDataLead  # noqa: PLC0415

        d = dict(src_dict)
        lead = ErasedEventDataLead.from_dict(d.pop("lead"))

        erased_event_data = cls(
            lead=lead,
        )

        return erased_event_data
