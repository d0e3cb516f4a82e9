from enum import StrEnum


class DestinationType(StrEnum):
    AMQP = "amqp"
    HTTPS = "https"

    def __str__(self) -> str:
        return str(self.value)
