from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="WebhookClientCertificateType1")


@_attrs_define
class WebhookClientCertificateType1:
    """
    Attributes:
        subject (str):
        issuer (str):
        not_after (str): UTC, millisecond precision.
    """

    subject: str
    issuer: str
    not_after: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        subject = self.subject

        issuer = self.issuer

        not_after = self.not_after

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "subject": subject,
                "issuer": issuer,
                "not_after": not_after,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        subject = d.pop("subject")

        issuer = d.pop("issuer")

        not_after = d.pop("not_after")

        webhook_client_certificate_type_1 = cls(
            subject=subject,
            issuer=issuer,
            not_after=not_after,
        )

        webhook_client_certificate_type_1.additional_properties = d
        return webhook_client_certificate_type_1

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
