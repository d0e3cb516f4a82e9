// The hand-written layer over the generated client (src/gen, from docs/openapi.yaml): what a
// generator cannot say. An answer that is not a success becomes a typed error carrying the API's
// message (412 `Lead has changed` its own class, with the current ETag), and the lead list and
// the events feed are followed to their end by their cursors.
export * from "./gen";
import { client } from "./gen/client.gen";
import { listEvents, listLeads } from "./gen/sdk.gen";
import type { Lead, ListEventsResponse } from "./gen/types.gen";

/** An answer of the API that is not a success: its status and its `{"error": ...}` message. */
export class ApiError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.name = "ApiError";
    this.status = status;
  }
}

/** 412 `Lead has changed`: the `If-Match` named another revision; nothing was written. */
export class LeadChangedError extends ApiError {
  /** The lead's current entity tag, to read it again or retry with. */
  readonly etag: string | null;
  constructor(message: string, etag: string | null) {
    super(412, message);
    this.name = "LeadChangedError";
    this.etag = etag;
  }
}

/**
 * Points the generated functions at the API with an org token (`qlf_org_...`). The token is
 * kept inside a function, so the client's configuration, printed or logged, never shows it.
 */
export function configure(options: { baseUrl: string; token: string }): void {
  const token = options.token;
  client.setConfig({ baseUrl: options.baseUrl, auth: () => token });
}

type Result<T> = { data?: T; error?: unknown; response?: Response };

/** The data of a successful answer, or the API's error thrown as an {@link ApiError}. */
export async function unwrap<T>(call: Promise<Result<T>>): Promise<T> {
  const { data, error, response } = await call;
  if (response === undefined) {
    // No answer at all: the request never reached the API.
    throw new ApiError(0, String(error ?? "no answer from the API"));
  }
  if (response.ok && data !== undefined) return data;
  if (response.ok && response.status === 204) return undefined as T;
  const message =
    typeof error === "object" && error !== null && "error" in error
      ? String((error as { error: unknown }).error)
      : response.statusText;
  if (response.status === 412) {
    throw new LeadChangedError(message, response.headers.get("etag"));
  }
  throw new ApiError(response.status, message);
}

/** Every lead of the org (updated since `updatedSince`, when given), page after page. */
export async function* allLeads(updatedSince?: string): AsyncGenerator<Lead> {
  let cursor: string | undefined;
  for (;;) {
    const page = await unwrap(
      listLeads({ query: { limit: 500, updated_since: updatedSince, cursor } }),
    );
    yield* page.leads;
    if (page.next_cursor == null) return;
    cursor = page.next_cursor;
  }
}

export type FeedEvent = ListEventsResponse["events"][number];

/**
 * The feed's events after `after` (from the start when omitted), page after page up to its end.
 * `position.cursor` is then the cursor to resume from later.
 */
export async function* feed(
  position: { cursor?: string } = {},
): AsyncGenerator<FeedEvent> {
  for (;;) {
    const page = await unwrap(
      listEvents({ query: { limit: 500, after: position.cursor } }),
    );
    position.cursor = page.next_cursor;
    if (page.events.length === 0) return;
    yield* page.events;
  }
}
