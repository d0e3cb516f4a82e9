from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.stage import Stage
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.external_ref import ExternalRef
    from ..models.lead_changes_profile import LeadChangesProfile


T = TypeVar("T", bound="LeadChanges")


@_attrs_define
class LeadChanges:
    """`data.previous`: the value before the change of every lead field the change altered. For
    `profile`, only the keys that changed, each with its previous value (`null` for a key the
    change added).

        Attributes:
            name (str | Unset):
            email (None | str | Unset):
            phone (str | Unset):
            channel (str | Unset):
            qualification_stage (Stage | Unset):
            route_target (None | str | Unset):
            profile (LeadChangesProfile | Unset):
            external_ref (ExternalRef | None | Unset):
            ai_paused (bool | Unset):
    """

    name: str | Unset = UNSET
    email: None | str | Unset = UNSET
    phone: str | Unset = UNSET
    channel: str | Unset = UNSET
    qualification_stage: Stage | Unset = UNSET
    route_target: None | str | Unset = UNSET
    profile: LeadChangesProfile | Unset = UNSET
    external_ref: ExternalRef | None | Unset = UNSET
    ai_paused: bool | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.external_ref import ExternalRef  # noqa: PLC0415

        name = self.name

        email: None | str | Unset
        if isinstance(self.email, Unset):
            email = UNSET
        else:
            email = self.email

        phone = self.phone

        channel = self.channel

        qualification_stage: str | Unset = UNSET
        if not isinstance(self.qualification_stage, Unset):
            qualification_stage = self.qualification_stage.value

        route_target: None | str | Unset
        if isinstance(self.route_target, Unset):
            route_target = UNSET
        else:
            route_target = self.route_target

        profile: dict[str, Any] | Unset = UNSET
        if not isinstance(self.profile, Unset):
            profile = self.profile.to_dict()

        external_ref: dict[str, Any] | None | Unset
        if isinstance(self.external_ref, Unset):
            external_ref = UNSET
        elif isinstance(self.external_ref, ExternalRef):
            external_ref = self.external_ref.to_dict()
        else:
            external_ref = self.external_ref

        ai_paused = self.ai_paused

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if name is not UNSET:
            field_dict["name"] = name
        if email is not UNSET:
            field_dict["email"] = email
        if phone is not UNSET:
            field_dict["phone"] = phone
        if channel is not UNSET:
            field_dict["channel"] = channel
        if qualification_stage is not UNSET:
            field_dict["qualification_stage"] = qualification_stage
        if route_target is not UNSET:
            field_dict["route_target"] = route_target
        if profile is not UNSET:
            field_dict["profile"] = profile
        if external_ref is not UNSET:
            field_dict["external_ref"] = external_ref
        if ai_paused is not UNSET:
            field_dict["ai_paused"] = ai_paused

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.external_ref import ExternalRef  # noqa: PLC0415
        from ..models.lead_changes_profile import LeadChangesProfile  # noqa: PLC0415

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

        channel = d.pop("channel", UNSET)

        _qualification_stage = d.pop("qualification_stage", UNSET)
        qualification_stage: Stage | Unset
        if isinstance(_qualification_stage, Unset):
            qualification_stage = UNSET
        else:
            qualification_stage = Stage(_qualification_stage)

        def _parse_route_target(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        route_target = _parse_route_target(d.pop("route_target", UNSET))

        _profile = d.pop("profile", UNSET)
        profile: LeadChangesProfile | Unset
        if isinstance(_profile, Unset):
            profile = UNSET
        else:
            profile = LeadChangesProfile.from_dict(_profile)

        def _parse_external_ref(data: object) -> ExternalRef | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                external_ref_type_1 = ExternalRef.from_dict(data)

                return external_ref_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ExternalRef | None | Unset, data)

        external_ref = _parse_external_ref(d.pop("external_ref", UNSET))

        ai_paused = d.pop("ai_paused", UNSET)

        lead_changes = cls(
            name=name,
            email=email,
            phone=phone,
            channel=channel,
            qualification_stage=qualification_stage,
            route_target=route_target,
            profile=profile,
            external_ref=external_ref,
            ai_paused=ai_paused,
        )

        lead_changes.additional_properties = d
        return lead_changes

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
