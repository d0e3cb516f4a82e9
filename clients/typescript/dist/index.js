"use strict";
var __createBinding = (this && this.__createBinding) || (Object.create ? (function(o, m, k, k2) {
    if (k2 === undefined) k2 = k;
    var desc = Object.getOwnPropertyDescriptor(m, k);
    if (!desc || ("get" in desc ? !m.__esModule : desc.writable || desc.configurable)) {
      desc = { enumerable: true, get: function() { return m[k]; } };
    }
    Object.defineProperty(o, k2, desc);
}) : (function(o, m, k, k2) {
    if (k2 === undefined) k2 = k;
    o[k2] = m[k];
}));
var __exportStar = (this && this.__exportStar) || function(m, exports) {
    for (var p in m) if (p !== "default" && !Object.prototype.hasOwnProperty.call(exports, p)) __createBinding(exports, m, p);
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.LeadChangedError = exports.ApiError = void 0;
exports.configure = configure;
exports.unwrap = unwrap;
exports.allLeads = allLeads;
exports.feed = feed;
// The hand-written layer over the generated client (src/gen, from docs/openapi.yaml): what a
// generator cannot say. An answer that is not a success becomes a typed error carrying the API's
// message (412 `Lead has changed` its own class, with the current ETag), and the lead list and
// the events feed are followed to their end by their cursors.
__exportStar(require("./gen"), exports);
const client_gen_1 = require("./gen/client.gen");
const sdk_gen_1 = require("./gen/sdk.gen");
/** An answer of the API that is not a success: its status and its `{"error": ...}` message. */
class ApiError extends Error {
    status;
    constructor(status, message) {
        super(message);
        this.name = "ApiError";
        this.status = status;
    }
}
exports.ApiError = ApiError;
/** 412 `Lead has changed`: the `If-Match` named another revision; nothing was written. */
class LeadChangedError extends ApiError {
    /** The lead's current entity tag, to read it again or retry with. */
    etag;
    constructor(message, etag) {
        super(412, message);
        this.name = "LeadChangedError";
        this.etag = etag;
    }
}
exports.LeadChangedError = LeadChangedError;
/**
 * Points the generated functions at the API with an org token (`qlf_org_...`). The token is
 * kept inside a function, so the client's configuration, printed or logged, never shows it.
 */
function configure(options) {
    const token = options.token;
    client_gen_1.client.setConfig({ baseUrl: options.baseUrl, auth: () => token });
}
/** The data of a successful answer, or the API's error thrown as an {@link ApiError}. */
async function unwrap(call) {
    const { data, error, response } = await call;
    if (response === undefined) {
        // No answer at all: the request never reached the API.
        throw new ApiError(0, String(error ?? "no answer from the API"));
    }
    if (response.ok && data !== undefined)
        return data;
    if (response.ok && response.status === 204)
        return undefined;
    const message = typeof error === "object" && error !== null && "error" in error
        ? String(error.error)
        : response.statusText;
    if (response.status === 412) {
        throw new LeadChangedError(message, response.headers.get("etag"));
    }
    throw new ApiError(response.status, message);
}
/** Every lead of the org (updated since `updatedSince`, when given), page after page. */
async function* allLeads(updatedSince) {
    let cursor;
    for (;;) {
        const page = await unwrap((0, sdk_gen_1.listLeads)({ query: { limit: 500, updated_since: updatedSince, cursor } }));
        yield* page.leads;
        if (page.next_cursor == null)
            return;
        cursor = page.next_cursor;
    }
}
/**
 * The feed's events after `after` (from the start when omitted), page after page up to its end.
 * `position.cursor` is then the cursor to resume from later.
 */
async function* feed(position = {}) {
    for (;;) {
        const page = await unwrap((0, sdk_gen_1.listEvents)({ query: { limit: 500, after: position.cursor } }));
        position.cursor = page.next_cursor;
        if (page.events.length === 0)
            return;
        yield* page.events;
    }
}
