"""The README's example, run by CI against a live lead-api (crates/lead-api/tests/api/clients.rs):
QUALIFIER_API_URL, QUALIFIER_TOKEN and QUALIFIER_LEAD (a lead of the token's org)."""

import os

from qualifier_client.api.leads import erase_lead, get_lead, patch_lead
from qualifier_client.helpers import LeadChanged, all_leads, connect, feed, unwrap, FeedPosition
from qualifier_client.models import PublicPatch

client = connect(os.environ["QUALIFIER_API_URL"], os.environ["QUALIFIER_TOKEN"])
lead_id = os.environ["QUALIFIER_LEAD"]

# Read a lead; its revision is its entity tag.
lead = unwrap(get_lead.sync_detailed(lead_id, client=client)).lead
print("got", lead.id, "revision", lead.revision)

# A write conditional on a revision someone else has moved past: a typed error.
try:
    unwrap(
        patch_lead.sync_detailed(
            lead_id,
            client=client,
            body=PublicPatch(status="closed"),
            if_match=f'"{lead.revision + 1}"',
        )
    )
    raise SystemExit("a stale If-Match was accepted")
except LeadChanged as e:
    print("stale:", e.message, "current", e.etag)

# The same write on the revision we read.
closed = unwrap(
    patch_lead.sync_detailed(
        lead_id,
        client=client,
        body=PublicPatch(status="closed"),
        if_match=f'"{lead.revision}"',
    )
).lead
print("closed", closed.id, "stage", closed.qualification_stage.value, "revision", closed.revision)

# Every lead, and every event, following the cursors to the end.
print("leads", sum(1 for _ in all_leads(client)))
position = FeedPosition()
types = [e.type_ for e in feed(client, position)]
print("events", len(types), ",".join(types))
print("resume the feed after", position.cursor)

# Erase the contact.
unwrap(erase_lead.sync_detailed(lead_id, client=client))
print("erased", lead_id)
