from enum import StrEnum


class ReplayDeliveriesBodyStatusItem(StrEnum):
    DEAD = "dead"
    FAILED = "failed"
    SKIPPED = "skipped"

    def __str__(self) -> str:
        return str(self.value)
