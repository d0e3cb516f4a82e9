from enum import StrEnum


class EndpointHealthState(StrEnum):
    DISABLED = "disabled"
    FAILING = "failing"
    HEALTHY = "healthy"

    def __str__(self) -> str:
        return str(self.value)
