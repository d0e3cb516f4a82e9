from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.webhook import Webhook


T = TypeVar("T", bound="PutEndpointResponse200")


@_attrs_define
class PutEndpointResponse200:
    """
    Attributes:
        endpoint (Webhook): An endpoint (the `webhook` routes show the org's primary one, its oldest). Its signing
            secret is never shown again after its creation or rotation.
    """

    endpoint: Webhook
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        endpoint = self.endpoint.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "endpoint": endpoint,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.webhook import Webhook  # noqa: PLC0415

        d = dict(src_dict)
        endpoint = Webhook.from_dict(d.pop("endpoint"))

        put_endpoint_response_200 = cls(
            endpoint=endpoint,
        )

        put_endpoint_response_200.additional_properties = d
        return put_endpoint_response_200

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
