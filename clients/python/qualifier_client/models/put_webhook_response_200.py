from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.webhook import Webhook


T = TypeVar("T", bound="PutWebhookResponse200")


@_attrs_define
class PutWebhookResponse200:
    """
    Attributes:
        webhook (Webhook): An endpoint (the `webhook` routes show the org's primary one, its oldest). Its signing secret
            is never shown again after its creation or rotation.
        signing_secret (str | Unset):
        standard_webhooks_secret (str | Unset): The same key in the form Standard Webhooks libraries take: `whsec_` and
            the standard base64 of the UTF-8 bytes of `signing_secret`.
    """

    webhook: Webhook
    signing_secret: str | Unset = UNSET
    standard_webhooks_secret: str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        webhook = self.webhook.to_dict()

        signing_secret = self.signing_secret

        standard_webhooks_secret = self.standard_webhooks_secret

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "webhook": webhook,
            }
        )
        if signing_secret is not UNSET:
            field_dict["signing_secret"] = signing_secret
        if standard_webhooks_secret is not UNSET:
            field_dict["standard_webhooks_secret"] = standard_webhooks_secret

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.webhook import Webhook  # noqa: PLC0415

        d = dict(src_dict)
        webhook = Webhook.from_dict(d.pop("webhook"))

        signing_secret = d.pop("signing_secret", UNSET)

        standard_webhooks_secret = d.pop("standard_webhooks_secret", UNSET)

        put_webhook_response_200 = cls(
            webhook=webhook,
            signing_secret=signing_secret,
            standard_webhooks_secret=standard_webhooks_secret,
        )

        put_webhook_response_200.additional_properties = d
        return put_webhook_response_200

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
