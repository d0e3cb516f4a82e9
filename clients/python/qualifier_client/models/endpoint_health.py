from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.endpoint_health_state import EndpointHealthState

T = TypeVar("T", bound="EndpointHealth")


@_attrs_define
class EndpointHealth:
    """The endpoint's health (docs/delivery.md, "Endpoint health"). `failing`: deliveries wait without using attempts while
    probes (test events marked `X-Qualifier-Probe: true`) run at growing intervals; the first 2xx makes it `healthy` and
    everything that waited is sent, oldest first. `disabled`: failing for `QUALIFIER_ENDPOINT_DISABLE_AFTER_S` or
    answered `410 Gone`; `enabled` is false until a PUT with `enabled: true`. `last_success_at` is the success that last
    ended a run of failures (a clean endpoint's successes are not written, to keep the hot path free).

        Attributes:
            state (EndpointHealthState):
            failing_since (None | str):
            last_success_at (None | str):
            last_failure_at (None | str):
            last_error (None | str):
            consecutive_failures (int):
            next_probe_at (None | str):
            disabled_reason (None | str):
    """

    state: EndpointHealthState
    failing_since: None | str
    last_success_at: None | str
    last_failure_at: None | str
    last_error: None | str
    consecutive_failures: int
    next_probe_at: None | str
    disabled_reason: None | str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        state = self.state.value

        failing_since: None | str
        failing_since = self.failing_since

        last_success_at: None | str
        last_success_at = self.last_success_at

        last_failure_at: None | str
        last_failure_at = self.last_failure_at

        last_error: None | str
        last_error = self.last_error

        consecutive_failures = self.consecutive_failures

        next_probe_at: None | str
        next_probe_at = self.next_probe_at

        disabled_reason: None | str
        disabled_reason = self.disabled_reason

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "state": state,
                "failing_since": failing_since,
                "last_success_at": last_success_at,
                "last_failure_at": last_failure_at,
                "last_error": last_error,
                "consecutive_failures": consecutive_failures,
                "next_probe_at": next_probe_at,
                "disabled_reason": disabled_reason,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        state = EndpointHealthState(d.pop("state"))

        def _parse_failing_since(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        failing_since = _parse_failing_since(d.pop("failing_since"))

        def _parse_last_success_at(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        last_success_at = _parse_last_success_at(d.pop("last_success_at"))

        def _parse_last_failure_at(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        last_failure_at = _parse_last_failure_at(d.pop("last_failure_at"))

        def _parse_last_error(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        last_error = _parse_last_error(d.pop("last_error"))

        consecutive_failures = d.pop("consecutive_failures")

        def _parse_next_probe_at(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        next_probe_at = _parse_next_probe_at(d.pop("next_probe_at"))

        def _parse_disabled_reason(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        disabled_reason = _parse_disabled_reason(d.pop("disabled_reason"))

        endpoint_health = cls(
            state=state,
            failing_since=failing_since,
            last_success_at=last_success_at,
            last_failure_at=last_failure_at,
            last_error=last_error,
            consecutive_failures=consecutive_failures,
            next_probe_at=next_probe_at,
            disabled_reason=disabled_reason,
        )

        endpoint_health.additional_properties = d
        return endpoint_health

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
