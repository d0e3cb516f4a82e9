from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.destination_type import DestinationType
from ..types import UNSET, Unset

T = TypeVar("T", bound="Destination")


@_attrs_define
class Destination:
    """Where the endpoint sends (docs/destinations.md). `https` (the default when absent): to `url`. `amqp`: each delivery
    published persistent to a RabbitMQ exchange of the receiver's with publisher confirms, the webhook's body bytes, the
    signature and delivery headers as AMQP headers, the delivery id as the message id; success is the broker's confirm.
    The url's host is held to the endpoint url's address rules, and `amqp://` (without TLS) is refused outside
    `QUALIFIER_WEBHOOK_ALLOW_CIDRS`. The password is sealed at rest and shown as `********`; sent back so, it keeps the
    stored one. Headers and `auth` are for `https` only. 422 naming the field.

        Attributes:
            type_ (DestinationType):
            url (str | Unset): amqp: `amqp[s]://user:password@host[:port][/vhost]`, no query; port 1024-65535.
            exchange (str | Unset): amqp: printable ASCII; empty is the broker's default exchange.
            routing_key (str | Unset): amqp. Default: ''.
    """

    type_: DestinationType
    url: str | Unset = UNSET
    exchange: str | Unset = UNSET
    routing_key: str | Unset = ""
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        type_ = self.type_.value

        url = self.url

        exchange = self.exchange

        routing_key = self.routing_key

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "type": type_,
            }
        )
        if url is not UNSET:
            field_dict["url"] = url
        if exchange is not UNSET:
            field_dict["exchange"] = exchange
        if routing_key is not UNSET:
            field_dict["routing_key"] = routing_key

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        type_ = DestinationType(d.pop("type"))

        url = d.pop("url", UNSET)

        exchange = d.pop("exchange", UNSET)

        routing_key = d.pop("routing_key", UNSET)

        destination = cls(
            type_=type_,
            url=url,
            exchange=exchange,
            routing_key=routing_key,
        )

        destination.additional_properties = d
        return destination

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
