from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.lead import Lead


T = TypeVar("T", bound="ListLeadsResponse200")


@_attrs_define
class ListLeadsResponse200:
    """
    Attributes:
        leads (list[Lead]):
        next_cursor (None | str):
    """

    leads: list[Lead]
    next_cursor: None | str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        leads = []
        for leads_item_data in self.leads:
            leads_item = leads_item_data.to_dict()
            leads.append(leads_item)

        next_cursor: None | str
        next_cursor = self.next_cursor

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "leads": leads,
                "next_cursor": next_cursor,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.lead import Lead  # noqa: PLC0415

        d = dict(src_dict)
        leads = []
        _leads = d.pop("leads")
        for leads_item_data in _leads:
            leads_item = Lead.from_dict(leads_item_data)

            leads.append(leads_item)

        def _parse_next_cursor(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        next_cursor = _parse_next_cursor(d.pop("next_cursor"))

        list_leads_response_200 = cls(
            leads=leads,
            next_cursor=next_cursor,
        )

        list_leads_response_200.additional_properties = d
        return list_leads_response_200

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
