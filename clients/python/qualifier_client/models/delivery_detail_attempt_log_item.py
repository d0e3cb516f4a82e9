from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.delivery_detail_attempt_log_item_error_kind import DeliveryDetailAttemptLogItemErrorKind
from ..types import UNSET, Unset

T = TypeVar("T", bound="DeliveryDetailAttemptLogItem")


@_attrs_define
class DeliveryDetailAttemptLogItem:
    """
    Attributes:
        attempt (int):
        started_at (str): UTC, millisecond precision.
        duration_ms (int):
        status_code (int | None):
        error (None | str):
        error_kind (DeliveryDetailAttemptLogItemErrorKind | Unset): Present when the attempt got no HTTP answer (absent
            on success, on an HTTP status, and in entries recorded before kinds were kept): why, as a kind a program can
            branch on; `error` is the line for people. `tls` includes a client certificate the receiver refused; `proxy` is
            the egress proxy failing, not the endpoint; `token_request` the endpoint's OAuth 2 token server giving no token
            (docs/receivers.md).
        response_body (str | Unset): The first 4 KiB of the receiver's answer, read as UTF-8 with every control
            character but newline and tab removed. Absent when it answered nothing, and in entries recorded before answers
            were kept.
        request_headers (list[list[str]] | Unset): The headers the attempt was sent with, in order, as [name, value]
            pairs, signatures included (never the secret). Absent in entries recorded before headers were kept, and for
            attempts that sent no request.
    """

    attempt: int
    started_at: str
    duration_ms: int
    status_code: int | None
    error: None | str
    error_kind: DeliveryDetailAttemptLogItemErrorKind | Unset = UNSET
    response_body: str | Unset = UNSET
    request_headers: list[list[str]] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        attempt = self.attempt

        started_at = self.started_at

        duration_ms = self.duration_ms

        status_code: int | None
        status_code = self.status_code

        error: None | str
        error = self.error

        error_kind: str | Unset = UNSET
        if not isinstance(self.error_kind, Unset):
            error_kind = self.error_kind.value

        response_body = self.response_body

        request_headers: list[list[str]] | Unset = UNSET
        if not isinstance(self.request_headers, Unset):
            request_headers = []
            for request_headers_item_data in self.request_headers:
                request_headers_item = request_headers_item_data

                request_headers.append(request_headers_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "attempt": attempt,
                "started_at": started_at,
                "duration_ms": duration_ms,
                "status_code": status_code,
                "error": error,
            }
        )
        if error_kind is not UNSET:
            field_dict["error_kind"] = error_kind
        if response_body is not UNSET:
            field_dict["response_body"] = response_body
        if request_headers is not UNSET:
            field_dict["request_headers"] = request_headers

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        attempt = d.pop("attempt")

        started_at = d.pop("started_at")

        duration_ms = d.pop("duration_ms")

        def _parse_status_code(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        status_code = _parse_status_code(d.pop("status_code"))

        def _parse_error(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        error = _parse_error(d.pop("error"))

        _error_kind = d.pop("error_kind", UNSET)
        error_kind: DeliveryDetailAttemptLogItemErrorKind | Unset
        if isinstance(_error_kind, Unset):
            error_kind = UNSET
        else:
            error_kind = DeliveryDetailAttemptLogItemErrorKind(_error_kind)

        response_body = d.pop("response_body", UNSET)

        _request_headers = d.pop("request_headers", UNSET)
        request_headers: list[list[str]] | Unset = UNSET
        if _request_headers is not UNSET:
            request_headers = []
            for request_headers_item_data in _request_headers:
                request_headers_item = cast(list[str], request_headers_item_data)

                request_headers.append(request_headers_item)

        delivery_detail_attempt_log_item = cls(
            attempt=attempt,
            started_at=started_at,
            duration_ms=duration_ms,
            status_code=status_code,
            error=error,
            error_kind=error_kind,
            response_body=response_body,
            request_headers=request_headers,
        )

        delivery_detail_attempt_log_item.additional_properties = d
        return delivery_detail_attempt_log_item

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
