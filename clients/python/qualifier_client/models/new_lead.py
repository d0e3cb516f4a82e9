from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.external_ref_input import ExternalRefInput
    from ..models.profile import Profile


T = TypeVar("T", bound="NewLead")


@_attrs_define
class NewLead:
    """
    Attributes:
        name (str):
        phone (str): `+` and 7..15 digits (spaces, dashes and parentheses are removed first).
        email (None | str | Unset):
        channel (None | str | Unset):
        profile (Profile | Unset): Known keys are typed; other keys hold any JSON scalar.
        external_ref (ExternalRefInput | Unset):
        route_target (None | str | Unset):
    """

    name: str
    phone: str
    email: None | str | Unset = UNSET
    channel: None | str | Unset = UNSET
    profile: Profile | Unset = UNSET
    external_ref: ExternalRefInput | Unset = UNSET
    route_target: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        phone = self.phone

        email: None | str | Unset
        if isinstance(self.email, Unset):
            email = UNSET
        else:
            email = self.email

        channel: None | str | Unset
        if isinstance(self.channel, Unset):
            channel = UNSET
        else:
            channel = self.channel

        profile: dict[str, Any] | Unset = UNSET
        if not isinstance(self.profile, Unset):
            profile = self.profile.to_dict()

        external_ref: dict[str, Any] | Unset = UNSET
        if not isinstance(self.external_ref, Unset):
            external_ref = self.external_ref.to_dict()

        route_target: None | str | Unset
        if isinstance(self.route_target, Unset):
            route_target = UNSET
        else:
            route_target = self.route_target

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
                "phone": phone,
            }
        )
        if email is not UNSET:
            field_dict["email"] = email
        if channel is not UNSET:
            field_dict["channel"] = channel
        if profile is not UNSET:
            field_dict["profile"] = profile
        if external_ref is not UNSET:
            field_dict["external_ref"] = external_ref
        if route_target is not UNSET:
            field_dict["route_target"] = route_target

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.external_ref_input import ExternalRefInput  # noqa: PLC0415
        from ..models.profile import Profile  # noqa: PLC0415

        d = dict(src_dict)
        name = d.pop("name")

        phone = d.pop("phone")

        def _parse_email(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        email = _parse_email(d.pop("email", UNSET))

        def _parse_channel(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        channel = _parse_channel(d.pop("channel", UNSET))

        _profile = d.pop("profile", UNSET)
        profile: Profile | Unset
        if isinstance(_profile, Unset):
            profile = UNSET
        else:
            profile = Profile.from_dict(_profile)

        _external_ref = d.pop("external_ref", UNSET)
        external_ref: ExternalRefInput | Unset
        if isinstance(_external_ref, Unset):
            external_ref = UNSET
        else:
            external_ref = ExternalRefInput.from_dict(_external_ref)

        def _parse_route_target(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        route_target = _parse_route_target(d.pop("route_target", UNSET))

        new_lead = cls(
            name=name,
            phone=phone,
            email=email,
            channel=channel,
            profile=profile,
            external_ref=external_ref,
            route_target=route_target,
        )

        new_lead.additional_properties = d
        return new_lead

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
