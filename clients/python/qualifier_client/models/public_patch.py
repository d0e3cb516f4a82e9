from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.external_ref_input import ExternalRefInput


T = TypeVar("T", bound="PublicPatch")


@_attrs_define
class PublicPatch:
    """At least one of the three fields, not all null.

    Attributes:
        external_ref (ExternalRefInput | Unset):
        ai_paused (bool | Unset):
        status (Literal['closed'] | Unset):
    """

    external_ref: ExternalRefInput | Unset = UNSET
    ai_paused: bool | Unset = UNSET
    status: Literal["closed"] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        external_ref: dict[str, Any] | Unset = UNSET
        if not isinstance(self.external_ref, Unset):
            external_ref = self.external_ref.to_dict()

        ai_paused = self.ai_paused

        status = self.status

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if external_ref is not UNSET:
            field_dict["external_ref"] = external_ref
        if ai_paused is not UNSET:
            field_dict["ai_paused"] = ai_paused
        if status is not UNSET:
            field_dict["status"] = status

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.external_ref_input import ExternalRefInput  # noqa: PLC0415

        d = dict(src_dict)
        _external_ref = d.pop("external_ref", UNSET)
        external_ref: ExternalRefInput | Unset
        if isinstance(_external_ref, Unset):
            external_ref = UNSET
        else:
            external_ref = ExternalRefInput.from_dict(_external_ref)

        ai_paused = d.pop("ai_paused", UNSET)

        status = cast(Literal["closed"] | Unset, d.pop("status", UNSET))
        if status != "closed" and not isinstance(status, Unset):
            raise ValueError(f"status must match const 'closed', got '{status}'")

        public_patch = cls(
            external_ref=external_ref,
            ai_paused=ai_paused,
            status=status,
        )

        public_patch.additional_properties = d
        return public_patch

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
