from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.stage import Stage

if TYPE_CHECKING:
    from ..models.external_ref import ExternalRef
    from ..models.profile import Profile


T = TypeVar("T", bound="Lead")


@_attrs_define
class Lead:
    """Properties not listed here may be added; ignore the ones you do not know.

    Attributes:
        id (UUID):
        name (str):
        email (None | str):
        phone (str):
        channel (str):
        qualification_stage (Stage):
        route_target (None | str):
        profile (Profile): Known keys are typed; other keys hold any JSON scalar.
        external_ref (ExternalRef | None):
        ai_paused (bool):
        conversation_url (str):
        created_at (str): UTC, millisecond precision.
        updated_at (str): UTC, millisecond precision.
        revision (int): 1 at creation, plus 1 with every change; apply an event only when it is higher than the one you
            stored.
    """

    id: UUID
    name: str
    email: None | str
    phone: str
    channel: str
    qualification_stage: Stage
    route_target: None | str
    profile: Profile
    external_ref: ExternalRef | None
    ai_paused: bool
    conversation_url: str
    created_at: str
    updated_at: str
    revision: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.external_ref import ExternalRef  # noqa: PLC0415

        id = str(self.id)

        name = self.name

        email: None | str
        email = self.email

        phone = self.phone

        channel = self.channel

        qualification_stage = self.qualification_stage.value

        route_target: None | str
        route_target = self.route_target

        profile = self.profile.to_dict()

        external_ref: dict[str, Any] | None
        if isinstance(self.external_ref, ExternalRef):
            external_ref = self.external_ref.to_dict()
        else:
            external_ref = self.external_ref

        ai_paused = self.ai_paused

        conversation_url = self.conversation_url

        created_at = self.created_at

        updated_at = self.updated_at

        revision = self.revision

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "name": name,
                "email": email,
                "phone": phone,
                "channel": channel,
                "qualification_stage": qualification_stage,
                "route_target": route_target,
                "profile": profile,
                "external_ref": external_ref,
                "ai_paused": ai_paused,
                "conversation_url": conversation_url,
                "created_at": created_at,
                "updated_at": updated_at,
                "revision": revision,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.external_ref import ExternalRef  # noqa: PLC0415
        from ..models.profile import Profile  # noqa: PLC0415

        d = dict(src_dict)
        id = UUID(d.pop("id"))

        name = d.pop("name")

        def _parse_email(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        email = _parse_email(d.pop("email"))

        phone = d.pop("phone")

        channel = d.pop("channel")

        qualification_stage = Stage(d.pop("qualification_stage"))

        def _parse_route_target(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        route_target = _parse_route_target(d.pop("route_target"))

        profile = Profile.from_dict(d.pop("profile"))

        def _parse_external_ref(data: object) -> ExternalRef | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                external_ref_type_1 = ExternalRef.from_dict(data)

                return external_ref_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ExternalRef | None, data)

        external_ref = _parse_external_ref(d.pop("external_ref"))

        ai_paused = d.pop("ai_paused")

        conversation_url = d.pop("conversation_url")

        created_at = d.pop("created_at")

        updated_at = d.pop("updated_at")

        revision = d.pop("revision")

        lead = cls(
            id=id,
            name=name,
            email=email,
            phone=phone,
            channel=channel,
            qualification_stage=qualification_stage,
            route_target=route_target,
            profile=profile,
            external_ref=external_ref,
            ai_paused=ai_paused,
            conversation_url=conversation_url,
            created_at=created_at,
            updated_at=updated_at,
            revision=revision,
        )

        lead.additional_properties = d
        return lead

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
