from enum import StrEnum


class Stage(StrEnum):
    CLOSED = "closed"
    QUALIFIED = "qualified"
    QUALIFYING = "qualifying"

    def __str__(self) -> str:
        return str(self.value)
