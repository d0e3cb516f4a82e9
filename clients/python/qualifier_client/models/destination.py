from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.destination_type import DestinationType
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.destination_credentials_type_1 import DestinationCredentialsType1


T = TypeVar("T", bound="Destination")


@_attrs_define
class Destination:
    """Where the endpoint sends (docs/destinations.md). `https` (the default when absent): to `url`. `amqp`: a persistent
    message on a RabbitMQ exchange of the receiver's, confirmed by the broker. `sqs`: `SendMessage` to a queue (a FIFO
    queue, whose url ends in `.fifo`, groups by the lead and deduplicates by the delivery id). `eventbridge`:
    `PutEvents` with the envelope as `Detail` and the event type as `DetailType`. `s3`: one object per delivery at
    `{prefix}{org_id}/{yyyy}/{mm}/{dd}/{event_id}.json`. Every type carries the webhook's body bytes and the signature
    and delivery headers (as AMQP headers, message attributes or object metadata; EventBridge: the envelope only).
    Addresses (`url`, `endpoint_url`) are held to the endpoint url's rules; `amqp://` without TLS is refused outside
    `QUALIFIER_WEBHOOK_ALLOW_CIDRS`. Secrets (the amqp url's password, the AWS `credentials`) are sealed at rest and
    shown as `********`; sent back so, they keep the stored ones. Headers and `auth` are for `https` only. 422 naming
    the field.

        Attributes:
            type_ (DestinationType):
            url (str | Unset): amqp: `amqp[s]://user:password@host[:port][/vhost]`, no query; port 1024-65535.
            exchange (str | Unset): amqp: printable ASCII; empty is the broker's default exchange.
            routing_key (str | Unset): amqp. Default: ''.
            queue_url (str | Unset): sqs: the queue's https url.
            event_bus (str | Unset): eventbridge: the bus's name or ARN.
            source (str | Unset): eventbridge: the entries' Source; not `aws.`… Default: 'qualifier'.
            bucket (str | Unset): s3.
            prefix (str | Unset): s3: the keys' prefix; not starting with `/`. Default: ''.
            region (str | Unset): sqs, eventbridge, s3: the AWS region (eu-west-1).
            endpoint_url (None | str | Unset): sqs, eventbridge, s3: an AWS-compatible service's https address; `null`:
                AWS's own for the region.
            credentials (DestinationCredentialsType1 | None | Unset): sqs, eventbridge, s3: the endpoint's own keys; `null`:
                the worker's AWS environment.
    """

    type_: DestinationType
    url: str | Unset = UNSET
    exchange: str | Unset = UNSET
    routing_key: str | Unset = ""
    queue_url: str | Unset = UNSET
    event_bus: str | Unset = UNSET
    source: str | Unset = "qualifier"
    bucket: str | Unset = UNSET
    prefix: str | Unset = ""
    region: str | Unset = UNSET
    endpoint_url: None | str | Unset = UNSET
    credentials: DestinationCredentialsType1 | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.destination_credentials_type_1 import DestinationCredentialsType1  # noqa: PLC0415

        type_ = self.type_.value

        url = self.url

        exchange = self.exchange

        routing_key = self.routing_key

        queue_url = self.queue_url

        event_bus = self.event_bus

        source = self.source

        bucket = self.bucket

        prefix = self.prefix

        region = self.region

        endpoint_url: None | str | Unset
        if isinstance(self.endpoint_url, Unset):
            endpoint_url = UNSET
        else:
            endpoint_url = self.endpoint_url

        credentials: dict[str, Any] | None | Unset
        if isinstance(self.credentials, Unset):
            credentials = UNSET
        elif isinstance(self.credentials, DestinationCredentialsType1):
            credentials = self.credentials.to_dict()
        else:
            credentials = self.credentials

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
        if queue_url is not UNSET:
            field_dict["queue_url"] = queue_url
        if event_bus is not UNSET:
            field_dict["event_bus"] = event_bus
        if source is not UNSET:
            field_dict["source"] = source
        if bucket is not UNSET:
            field_dict["bucket"] = bucket
        if prefix is not UNSET:
            field_dict["prefix"] = prefix
        if region is not UNSET:
            field_dict["region"] = region
        if endpoint_url is not UNSET:
            field_dict["endpoint_url"] = endpoint_url
        if credentials is not UNSET:
            field_dict["credentials"] = credentials

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.destination_credentials_type_1 import DestinationCredentialsType1  # noqa: PLC0415

        d = dict(src_dict)
        type_ = DestinationType(d.pop("type"))

        url = d.pop("url", UNSET)

        exchange = d.pop("exchange", UNSET)

        routing_key = d.pop("routing_key", UNSET)

        queue_url = d.pop("queue_url", UNSET)

        event_bus = d.pop("event_bus", UNSET)

        source = d.pop("source", UNSET)

        bucket = d.pop("bucket", UNSET)

        prefix = d.pop("prefix", UNSET)

        region = d.pop("region", UNSET)

        def _parse_endpoint_url(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        endpoint_url = _parse_endpoint_url(d.pop("endpoint_url", UNSET))

        def _parse_credentials(data: object) -> DestinationCredentialsType1 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                credentials_type_1 = DestinationCredentialsType1.from_dict(data)

                return credentials_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(DestinationCredentialsType1 | None | Unset, data)

        credentials = _parse_credentials(d.pop("credentials", UNSET))

        destination = cls(
            type_=type_,
            url=url,
            exchange=exchange,
            routing_key=routing_key,
            queue_url=queue_url,
            event_bus=event_bus,
            source=source,
            bucket=bucket,
            prefix=prefix,
            region=region,
            endpoint_url=endpoint_url,
            credentials=credentials,
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
