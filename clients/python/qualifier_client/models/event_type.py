from enum import StrEnum


class EventType(StrEnum):
    HANDOFF_ACCEPTED = "handoff.accepted"
    HANDOFF_CREATED = "handoff.created"
    HANDOFF_RELEASED = "handoff.released"
    LEAD_CREATED = "lead.created"
    LEAD_ERASED = "lead.erased"
    LEAD_QUALIFIED = "lead.qualified"
    LEAD_STAGE_CHANGED = "lead.stage_changed"
    LEAD_UPDATED = "lead.updated"

    def __str__(self) -> str:
        return str(self.value)
