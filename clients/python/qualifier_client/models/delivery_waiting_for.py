from enum import StrEnum


class DeliveryWaitingFor(StrEnum):
    EARLIER_DELIVERY = "earlier_delivery"
    THROTTLE = "throttle"

    def __str__(self) -> str:
        return str(self.value)
