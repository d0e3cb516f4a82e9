from enum import StrEnum


class Ordering(StrEnum):
    NONE = "none"
    PER_LEAD = "per_lead"

    def __str__(self) -> str:
        return str(self.value)
