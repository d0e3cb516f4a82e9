from enum import StrEnum


class HandoffState(StrEnum):
    ACCEPTED = "accepted"
    RELEASED = "released"
    REQUESTED = "requested"

    def __str__(self) -> str:
        return str(self.value)
