from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.erased_event import ErasedEvent
    from ..models.event_handoff_accepted import EventHandoffAccepted
    from ..models.event_handoff_created import EventHandoffCreated
    from ..models.event_handoff_released import EventHandoffReleased
    from ..models.event_lead_created import EventLeadCreated
    from ..models.event_lead_erased import EventLeadErased
    from ..models.event_lead_qualified import EventLeadQualified
    from ..models.event_lead_stage_changed import EventLeadStageChanged
    from ..models.event_lead_updated import EventLeadUpdated


T = TypeVar("T", bound="ListEventsResponse200")


@_attrs_define
class ListEventsResponse200:
    """
    Attributes:
        events (list[ErasedEvent | EventHandoffAccepted | EventHandoffCreated | EventHandoffReleased | EventLeadCreated
            | EventLeadErased | EventLeadQualified | EventLeadStageChanged | EventLeadUpdated]):
        next_cursor (str):
    """

    events: list[
        ErasedEvent
        | EventHandoffAccepted
        | EventHandoffCreated
        | EventHandoffReleased
        | EventLeadCreated
        | EventLeadErased
        | EventLeadQualified
        | EventLeadStageChanged
        | EventLeadUpdated
    ]
    next_cursor: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.event_handoff_accepted import EventHandoffAccepted  # noqa: PLC0415
        from ..models.event_handoff_created import EventHandoffCreated  # noqa: PLC0415
        from ..models.event_handoff_released import EventHandoffReleased  # noqa: PLC0415
        from ..models.event_lead_created import EventLeadCreated  # noqa: PLC0415
        from ..models.event_lead_erased import EventLeadErased  # noqa: PLC0415
        from ..models.event_lead_qualified import EventLeadQualified  # noqa: PLC0415
        from ..models.event_lead_stage_changed import EventLeadStageChanged  # noqa: PLC0415
        from ..models.event_lead_updated import EventLeadUpdated  # noqa: PLC0415

        events = []
        for events_item_data in self.events:
            events_item: dict[str, Any]
            if isinstance(events_item_data, EventLeadCreated):
                events_item = events_item_data.to_dict()
            elif isinstance(events_item_data, EventLeadUpdated):
                events_item = events_item_data.to_dict()
            elif isinstance(events_item_data, EventLeadStageChanged):
                events_item = events_item_data.to_dict()
            elif isinstance(events_item_data, EventLeadQualified):
                events_item = events_item_data.to_dict()
            elif isinstance(events_item_data, EventHandoffCreated):
                events_item = events_item_data.to_dict()
            elif isinstance(events_item_data, EventHandoffAccepted):
                events_item = events_item_data.to_dict()
            elif isinstance(events_item_data, EventHandoffReleased):
                events_item = events_item_data.to_dict()
            elif isinstance(events_item_data, EventLeadErased):
                events_item = events_item_data.to_dict()
            else:
                events_item = events_item_data.to_dict()

            events.append(events_item)

        next_cursor = self.next_cursor

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "events": events,
                "next_cursor": next_cursor,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.erased_event import ErasedEvent  # noqa: PLC0415
        from ..models.event_handoff_accepted import EventHandoffAccepted  # noqa: PLC0415
        from ..models.event_handoff_created import EventHandoffCreated  # noqa: PLC0415
        from ..models.event_handoff_released import EventHandoffReleased  # noqa: PLC0415
        from ..models.event_lead_created import EventLeadCreated  # noqa: PLC0415
        from ..models.event_lead_erased import EventLeadErased  # noqa: PLC0415
        from ..models.event_lead_qualified import EventLeadQualified  # noqa: PLC0415
        from ..models.event_lead_stage_changed import EventLeadStageChanged  # noqa: PLC0415
        from ..models.event_lead_updated import EventLeadUpdated  # noqa: PLC0415

        d = dict(src_dict)
        events = []
        _events = d.pop("events")
        for events_item_data in _events:

            def _parse_events_item(
                data: object,
            ) -> (
                ErasedEvent
                | EventHandoffAccepted
                | EventHandoffCreated
                | EventHandoffReleased
                | EventLeadCreated
                | EventLeadErased
                | EventLeadQualified
                | EventLeadStageChanged
                | EventLeadUpdated
            ):
                try:
                    if not isinstance(data, dict):
                        raise TypeError()
                    events_item_type_0 = EventLeadCreated.from_dict(data)

                    return events_item_type_0
                except (TypeError, ValueError, AttributeError, KeyError):
                    pass
                try:
                    if not isinstance(data, dict):
                        raise TypeError()
                    events_item_type_1 = EventLeadUpdated.from_dict(data)

                    return events_item_type_1
                except (TypeError, ValueError, AttributeError, KeyError):
                    pass
                try:
                    if not isinstance(data, dict):
                        raise TypeError()
                    events_item_type_2 = EventLeadStageChanged.from_dict(data)

                    return events_item_type_2
                except (TypeError, ValueError, AttributeError, KeyError):
                    pass
                try:
                    if not isinstance(data, dict):
                        raise TypeError()
                    events_item_type_3 = EventLeadQualified.from_dict(data)

                    return events_item_type_3
                except (TypeError, ValueError, AttributeError, KeyError):
                    pass
                try:
                    if not isinstance(data, dict):
                        raise TypeError()
                    events_item_type_4 = EventHandoffCreated.from_dict(data)

                    return events_item_type_4
                except (TypeError, ValueError, AttributeError, KeyError):
                    pass
                try:
                    if not isinstance(data, dict):
                        raise TypeError()
                    events_item_type_5 = EventHandoffAccepted.from_dict(data)

                    return events_item_type_5
                except (TypeError, ValueError, AttributeError, KeyError):
                    pass
                try:
                    if not isinstance(data, dict):
                        raise TypeError()
                    events_item_type_6 = EventHandoffReleased.from_dict(data)

                    return events_item_type_6
                except (TypeError, ValueError, AttributeError, KeyError):
                    pass
                try:
                    if not isinstance(data, dict):
                        raise TypeError()
                    events_item_type_7 = EventLeadErased.from_dict(data)

                    return events_item_type_7
                except (TypeError, ValueError, AttributeError, KeyError):
                    pass
                if not isinstance(data, dict):
                    raise TypeError()
                events_item_type_8 = ErasedEvent.from_dict(data)

                return events_item_type_8

            events_item = _parse_events_item(events_item_data)

            events.append(events_item)

        next_cursor = d.pop("next_cursor")

        list_events_response_200 = cls(
            events=events,
            next_cursor=next_cursor,
        )

        list_events_response_200.additional_properties = d
        return list_events_response_200

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
