from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.webhook import Webhook


T = TypeVar("T", bound="CreateEndpointResponse201")


@_attrs_define
class CreateEndpointResponse201:
    """
    Attributes:
        endpoint (Webhook): An endpoint (the `webhook` routes show the org's primary one, its oldest). Its signing
            secret is never shown again after its creation or rotation.
        signing_secret (str):
        standard_webhooks_secret (str): The same key in the form Standard Webhooks libraries take: `whsec_` and the
            standard base64 of the UTF-8 bytes of `signing_secret`.
    """

    endpoint: Webhook
    signing_secret: str
    standard_webhooks_secret: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        endpoint = self.endpoint.to_dict()

        signing_secret = self.signing_secret

        standard_webhooks_secret = self.standard_webhooks_secret

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "endpoint": endpoint,
                "signing_secret": signing_secret,
                "standard_webhooks_secret": standard_webhooks_secret,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.webhook import Webhook  # noqa: PLC0415

        d = dict(src_dict)
        endpoint = Webhook.from_dict(d.pop("endpoint"))

        signing_secret = d.pop("signing_secret")

        standard_webhooks_secret = d.pop("standard_webhooks_secret")

        create_endpoint_response_201 = cls(
            endpoint=endpoint,
            signing_secret=signing_secret,
            standard_webhooks_secret=standard_webhooks_secret,
        )

        create_endpoint_response_201.additional_properties = d
        return create_endpoint_response_201

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
