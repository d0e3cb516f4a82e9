from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="ReceiverHeader")


@_attrs_define
class ReceiverHeader:
    """
    Attributes:
        name (str): An HTTP token, unique whatever its case; not Host, Content-Type, Content-Length, Transfer-Encoding,
            Connection, User-Agent, X-Qualifier-*, webhook-*, nor Authorization when the endpoint has `auth`.
        value (str): No control characters; `********` when secret, as shown.
        secret (bool | Unset): Sealed at rest and shown as `********`. Default: False.
    """

    name: str
    value: str
    secret: bool | Unset = False
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        value = self.value

        secret = self.secret

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
                "value": value,
            }
        )
        if secret is not UNSET:
            field_dict["secret"] = secret

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = d.pop("name")

        value = d.pop("value")

        secret = d.pop("secret", UNSET)

        receiver_header = cls(
            name=name,
            value=value,
            secret=secret,
        )

        receiver_header.additional_properties = d
        return receiver_header

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
