from enum import StrEnum


class DeliveryDetailAttemptLogItemErrorKind(StrEnum):
    CONNECT = "connect"
    INVALID_URL = "invalid_url"
    PROXY = "proxy"
    REFUSED_ADDRESS = "refused_address"
    REQUEST = "request"
    SECRET_UNREADABLE = "secret_unreadable"
    TIMEOUT = "timeout"
    TLS = "tls"
    TOKEN_REQUEST = "token_request"

    def __str__(self) -> str:
        return str(self.value)
