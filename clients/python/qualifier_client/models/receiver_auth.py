from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.receiver_auth_client_auth import ReceiverAuthClientAuth
from ..models.receiver_auth_type import ReceiverAuthType
from ..types import UNSET, Unset

T = TypeVar("T", bound="ReceiverAuth")


@_attrs_define
class ReceiverAuth:
    """`basic` (RFC 7617), `bearer`, or OAuth 2 client credentials (RFC 6749 section 4.4: the worker fetches a token from
    `token_url`, keeps it until `expires_in` less 30 s, and on a 401 fetches a new one and resends within the same
    attempt). Secrets (`password`, `token`, `client_secret`) are shown as `********`.

        Attributes:
            type_ (ReceiverAuthType):
            username (str | Unset): basic; no `:`.
            password (str | Unset): basic.
            token (str | Unset): bearer; no spaces.
            token_url (str | Unset): oauth2_client_credentials; https, held to the endpoint url's address rules.
            client_id (str | Unset):
            client_secret (str | Unset):
            scope (None | str | Unset):
            audience (None | str | Unset):
            client_auth (ReceiverAuthClientAuth | Unset):  Default: ReceiverAuthClientAuth.BODY.
    """

    type_: ReceiverAuthType
    username: str | Unset = UNSET
    password: str | Unset = UNSET
    token: str | Unset = UNSET
    token_url: str | Unset = UNSET
    client_id: str | Unset = UNSET
    client_secret: str | Unset = UNSET
    scope: None | str | Unset = UNSET
    audience: None | str | Unset = UNSET
    client_auth: ReceiverAuthClientAuth | Unset = ReceiverAuthClientAuth.BODY
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        type_ = self.type_.value

        username = self.username

        password = self.password

        token = self.token

        token_url = self.token_url

        client_id = self.client_id

        client_secret = self.client_secret

        scope: None | str | Unset
        if isinstance(self.scope, Unset):
            scope = UNSET
        else:
            scope = self.scope

        audience: None | str | Unset
        if isinstance(self.audience, Unset):
            audience = UNSET
        else:
            audience = self.audience

        client_auth: str | Unset = UNSET
        if not isinstance(self.client_auth, Unset):
            client_auth = self.client_auth.value

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "type": type_,
            }
        )
        if username is not UNSET:
            field_dict["username"] = username
        if password is not UNSET:
            field_dict["password"] = password
        if token is not UNSET:
            field_dict["token"] = token
        if token_url is not UNSET:
            field_dict["token_url"] = token_url
        if client_id is not UNSET:
            field_dict["client_id"] = client_id
        if client_secret is not UNSET:
            field_dict["client_secret"] = client_secret
        if scope is not UNSET:
            field_dict["scope"] = scope
        if audience is not UNSET:
            field_dict["audience"] = audience
        if client_auth is not UNSET:
            field_dict["client_auth"] = client_auth

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        type_ = ReceiverAuthType(d.pop("type"))

        username = d.pop("username", UNSET)

        password = d.pop("password", UNSET)

        token = d.pop("token", UNSET)

        token_url = d.pop("token_url", UNSET)

        client_id = d.pop("client_id", UNSET)

        client_secret = d.pop("client_secret", UNSET)

        def _parse_scope(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        scope = _parse_scope(d.pop("scope", UNSET))

        def _parse_audience(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        audience = _parse_audience(d.pop("audience", UNSET))

        _client_auth = d.pop("client_auth", UNSET)
        client_auth: ReceiverAuthClientAuth | Unset
        if isinstance(_client_auth, Unset):
            client_auth = UNSET
        else:
            client_auth = ReceiverAuthClientAuth(_client_auth)

        receiver_auth = cls(
            type_=type_,
            username=username,
            password=password,
            token=token,
            token_url=token_url,
            client_id=client_id,
            client_secret=client_secret,
            scope=scope,
            audience=audience,
            client_auth=client_auth,
        )

        receiver_auth.additional_properties = d
        return receiver_auth

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
