from enum import StrEnum


class ReceiverAuthClientAuth(StrEnum):
    BASIC = "basic"
    BODY = "body"

    def __str__(self) -> str:
        return str(self.value)
