from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="Profile")


@_attrs_define
class Profile:
    """Known keys are typed; other keys hold any JSON scalar.

    Attributes:
        budget (str | Unset):
        bedrooms (int | Unset):
        area (str | Unset):
    """

    budget: str | Unset = UNSET
    bedrooms: int | Unset = UNSET
    area: str | Unset = UNSET
    additional_properties: dict[str, bool | float | str] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        budget = self.budget

        bedrooms = self.bedrooms

        area = self.area

        field_dict: dict[str, Any] = {}
        for prop_name, prop in self.additional_properties.items():
            field_dict[prop_name] = prop

        field_dict.update({})
        if budget is not UNSET:
            field_dict["budget"] = budget
        if bedrooms is not UNSET:
            field_dict["bedrooms"] = bedrooms
        if area is not UNSET:
            field_dict["area"] = area

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        budget = d.pop("budget", UNSET)

        bedrooms = d.pop("bedrooms", UNSET)

        area = d.pop("area", UNSET)

        profile = cls(
            budget=budget,
            bedrooms=bedrooms,
            area=area,
        )

        additional_properties = {}
        for prop_name, prop_dict in d.items():

            def _parse_additional_property(data: object) -> bool | float | str:
                return cast(bool | float | str, data)

            additional_property = _parse_additional_property(prop_dict)

            additional_properties[prop_name] = additional_property

        profile.additional_properties = additional_properties
        return profile

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> bool | float | str:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: bool | float | str) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
