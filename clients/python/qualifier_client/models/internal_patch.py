from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.stage import Stage
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.internal_patch_profile import InternalPatchProfile


T = TypeVar("T", bound="InternalPatch")


@_attrs_define
class InternalPatch:
    """
    Attributes:
        name (str | Unset):
        email (None | str | Unset):
        phone (str | Unset):
        profile (InternalPatchProfile | Unset): Merged key by key; null removes a key.
        route_target (None | str | Unset):
        qualification_stage (Stage | Unset):
    """

    name: str | Unset = UNSET
    email: None | str | Unset = UNSET
    phone: str | Unset = UNSET
    profile: InternalPatchProfile | Unset = UNSET
    route_target: None | str | Unset = UNSET
    qualification_stage: Stage | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        email: None | str | Unset
        if isinstance(self.email, Unset):
            email = UNSET
        else:
            email = self.email

        phone = self.phone

        profile: dict[str, Any] | Unset = UNSET
        if not isinstance(self.profile, Unset):
            profile = self.profile.to_dict()

        route_target: None | str | Unset
        if isinstance(self.route_target, Unset):
            route_target = UNSET
        else:
            route_target = self.route_target

        qualification_stage: str | Unset = UNSET
        if not isinstance(self.qualification_stage, Unset):
            qualification_stage = self.qualification_stage.value

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if name is not UNSET:
            field_dict["name"] = name
        if email is not UNSET:
            field_dict["email"] = email
        if phone is not UNSET:
            field_dict["phone"] = phone
        if profile is not UNSET:
            field_dict["profile"] = profile
        if route_target is not UNSET:
            field_dict["route_target"] = route_target
        if qualification_stage is not UNSET:
            field_dict["qualification_stage"] = qualification_stage

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.internal_patch_profile import InternalPatchProfile  # noqa: PLC0415

        d = dict(src_dict)
        name = d.pop("name", UNSET)

        def _parse_email(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        email = _parse_email(d.pop("email", UNSET))

        phone = d.pop("phone", UNSET)

        _profile = d.pop("profile", UNSET)
        profile: InternalPatchProfile | Unset
        if isinstance(_profile, Unset):
            profile = UNSET
        else:
            profile = InternalPatchProfile.from_dict(_profile)

        def _parse_route_target(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        route_target = _parse_route_target(d.pop("route_target", UNSET))

        _qualification_stage = d.pop("qualification_stage", UNSET)
        qualification_stage: Stage | Unset
        if isinstance(_qualification_stage, Unset):
            qualification_stage = UNSET
        else:
            qualification_stage = Stage(_qualification_stage)

        internal_patch = cls(
            name=name,
            email=email,
            phone=phone,
            profile=profile,
            route_target=route_target,
            qualification_stage=qualification_stage,
        )

        internal_patch.additional_properties = d
        return internal_patch

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
