from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="RotateEndpointSecretResponse200")


@_attrs_define
class RotateEndpointSecretResponse200:
    """
    Attributes:
        signing_secret (str):
        standard_webhooks_secret (str): The same key in the form Standard Webhooks libraries take: `whsec_` and the
            standard base64 of the UTF-8 bytes of `signing_secret`.
        previous_secret_expires_at (None | str):
    """

    signing_secret: str
    standard_webhooks_secret: str
    previous_secret_expires_at: None | str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        signing_secret = self.signing_secret

        standard_webhooks_secret = self.standard_webhooks_secret

        previous_secret_expires_at: None | str
        previous_secret_expires_at = self.previous_secret_expires_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "signing_secret": signing_secret,
                "standard_webhooks_secret": standard_webhooks_secret,
                "previous_secret_expires_at": previous_secret_expires_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        signing_secret = d.pop("signing_secret")

        standard_webhooks_secret = d.pop("standard_webhooks_secret")

        def _parse_previous_secret_expires_at(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        previous_secret_expires_at = _parse_previous_secret_expires_at(d.pop("previous_secret_expires_at"))

        rotate_endpoint_secret_response_200 = cls(
            signing_secret=signing_secret,
            standard_webhooks_secret=standard_webhooks_secret,
            previous_secret_expires_at=previous_secret_expires_at,
        )

        rotate_endpoint_secret_response_200.additional_properties = d
        return rotate_endpoint_secret_response_200

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
