from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.replay_deliveries_response_202_not_replayed import ReplayDeliveriesResponse202NotReplayed


T = TypeVar("T", bound="ReplayDeliveriesResponse202")


@_attrs_define
class ReplayDeliveriesResponse202:
    """
    Attributes:
        matched (int):
        replayed (int):
        not_replayed (ReplayDeliveriesResponse202NotReplayed | Unset): Present when some matched deliveries were left as
            they were: a count by reason. `Event expired` counts those whose event is past retention (a single replay of one
            answers 409).
    """

    matched: int
    replayed: int
    not_replayed: ReplayDeliveriesResponse202NotReplayed | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        matched = self.matched

        replayed = self.replayed

        not_replayed: dict[str, Any] | Unset = UNSET
        if not isinstance(self.not_replayed, Unset):
            not_replayed = self.not_replayed.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "matched": matched,
                "replayed": replayed,
            }
        )
        if not_replayed is not UNSET:
            field_dict["not_replayed"] = not_replayed

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.replay_deliveries_response_202_not_replayed import (
            ReplayDeliveriesResponse202NotReplayed,  # noqa: PLC0415
        )

        d = dict(src_dict)
        matched = d.pop("matched")

        replayed = d.pop("replayed")

        _not_replayed = d.pop("not_replayed", UNSET)
        not_replayed: ReplayDeliveriesResponse202NotReplayed | Unset
        if isinstance(_not_replayed, Unset):
            not_replayed = UNSET
        else:
            not_replayed = ReplayDeliveriesResponse202NotReplayed.from_dict(_not_replayed)

        replay_deliveries_response_202 = cls(
            matched=matched,
            replayed=replayed,
            not_replayed=not_replayed,
        )

        replay_deliveries_response_202.additional_properties = d
        return replay_deliveries_response_202

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
