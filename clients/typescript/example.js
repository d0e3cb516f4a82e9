// The README's example, run by CI against a live lead-api (crates/lead-api/tests/api/clients.rs):
// QUALIFIER_API_URL, QUALIFIER_TOKEN and QUALIFIER_LEAD (a lead of the token's org).
const q = require("qualifier-client");

async function main() {
  q.configure({ baseUrl: process.env.QUALIFIER_API_URL, token: process.env.QUALIFIER_TOKEN });
  const leadId = process.env.QUALIFIER_LEAD;

  // Read a lead; its revision is its entity tag.
  const { lead } = await q.unwrap(q.getLead({ path: { leadId } }));
  console.log("got", lead.id, "revision", lead.revision);

  // A write conditional on a revision someone else has moved past: a typed error.
  try {
    await q.unwrap(
      q.patchLead({
        path: { leadId },
        headers: { "If-Match": `"${lead.revision + 1}"` },
        body: { status: "closed" },
      }),
    );
    throw new Error("a stale If-Match was accepted");
  } catch (e) {
    if (!(e instanceof q.LeadChangedError)) throw e;
    console.log("stale:", e.message, "current", e.etag);
  }

  // The same write on the revision we read.
  const closed = await q.unwrap(
    q.patchLead({
      path: { leadId },
      headers: { "If-Match": `"${lead.revision}"` },
      body: { status: "closed" },
    }),
  );
  console.log("closed", closed.lead.id, "stage", closed.lead.qualification_stage, "revision", closed.lead.revision);

  // Every lead, and every event, following the cursors to the end.
  let leads = 0;
  for await (const _ of q.allLeads()) leads += 1;
  console.log("leads", leads);
  const position = {};
  const types = [];
  for await (const e of q.feed(position)) types.push(e.type);
  console.log("events", types.length, types.join(","));
  console.log("resume the feed after", position.cursor);

  // Erase the contact.
  await q.unwrap(q.eraseLead({ path: { leadId } }));
  console.log("erased", leadId);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
