from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.test_endpoint_filter_body_event import TestEndpointFilterBodyEvent


T = TypeVar("T", bound="TestEndpointFilterBody")


@_attrs_define
class TestEndpointFilterBody:
    """
    Attributes:
        event (TestEndpointFilterBodyEvent): An event's envelope, as delivered or read from the feed.
    """

    event: TestEndpointFilterBodyEvent
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        event = self.event.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "event": event,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.test_endpoint_filter_body_event import TestEndpointFilterBodyEvent  # noqa: PLC0415

        d = dict(src_dict)
        event = TestEndpointFilterBodyEvent.from_dict(d.pop("event"))

        test_endpoint_filter_body = cls(
            event=event,
        )

        test_endpoint_filter_body.additional_properties = d
        return test_endpoint_filter_body

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
