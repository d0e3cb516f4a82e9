from enum import StrEnum


class DeliveryStatus(StrEnum):
    DEAD = "dead"
    FAILED = "failed"
    PENDING = "pending"
    SKIPPED = "skipped"
    SUCCEEDED = "succeeded"

    def __str__(self) -> str:
        return str(self.value)
