from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.profile import Profile


T = TypeVar("T", bound="InboundContact")


@_attrs_define
class InboundContact:
    """
    Attributes:
        name (str):
        phone (str):
        channel (str):
        email (None | str | Unset):
        profile (Profile | Unset): Known keys are typed; other keys hold any JSON scalar.
    """

    name: str
    phone: str
    channel: str
    email: None | str | Unset = UNSET
    profile: Profile | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        phone = self.phone

        channel = self.channel

        email: None | str | Unset
        if isinstance(self.email, Unset):
            email = UNSET
        else:
            email = self.email

        profile: dict[str, Any] | Unset = UNSET
        if not isinstance(self.profile, Unset):
            profile = self.profile.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
                "phone": phone,
                "channel": channel,
            }
        )
        if email is not UNSET:
            field_dict["email"] = email
        if profile is not UNSET:
            field_dict["profile"] = profile

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.profile import Profile  # noqa: PLC0415

        d = dict(src_dict)
        name = d.pop("name")

        phone = d.pop("phone")

        channel = d.pop("channel")

        def _parse_email(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        email = _parse_email(d.pop("email", UNSET))

        _profile = d.pop("profile", UNSET)
        profile: Profile | Unset
        if isinstance(_profile, Unset):
            profile = UNSET
        else:
            profile = Profile.from_dict(_profile)

        inbound_contact = cls(
            name=name,
            phone=phone,
            channel=channel,
            email=email,
            profile=profile,
        )

        inbound_contact.additional_properties = d
        return inbound_contact

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
