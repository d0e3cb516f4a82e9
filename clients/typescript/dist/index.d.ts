export * from "./gen";
import type { Lead, ListEventsResponse } from "./gen/types.gen";
/** An answer of the API that is not a success: its status and its `{"error": ...}` message. */
export declare class ApiError extends Error {
    readonly status: number;
    constructor(status: number, message: string);
}
/** 412 `Lead has changed`: the `If-Match` named another revision; nothing was written. */
export declare class LeadChangedError extends ApiError {
    /** The lead's current entity tag, to read it again or retry with. */
    readonly etag: string | null;
    constructor(message: string, etag: string | null);
}
/**
 * Points the generated functions at the API with an org token (`qlf_org_...`). The token is
 * kept inside a function, so the client's configuration, printed or logged, never shows it.
 */
export declare function configure(options: {
    baseUrl: string;
    token: string;
}): void;
type Result<T> = {
    data?: T;
    error?: unknown;
    response?: Response;
};
/** The data of a successful answer, or the API's error thrown as an {@link ApiError}. */
export declare function unwrap<T>(call: Promise<Result<T>>): Promise<T>;
/** Every lead of the org (updated since `updatedSince`, when given), page after page. */
export declare function allLeads(updatedSince?: string): AsyncGenerator<Lead>;
export type FeedEvent = ListEventsResponse["events"][number];
/**
 * The feed's events after `after` (from the start when omitted), page after page up to its end.
 * `position.cursor` is then the cursor to resume from later.
 */
export declare function feed(position?: {
    cursor?: string;
}): AsyncGenerator<FeedEvent>;
