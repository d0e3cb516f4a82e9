export type ClientOptions = {
    baseUrl: 'http://127.0.0.1:8080' | 'http://127.0.0.1:8081' | (string & {});
};
export type Webhooks = LeadCreatedEventWebhookRequest | LeadUpdatedEventWebhookRequest | LeadStageChangedEventWebhookRequest | LeadQualifiedEventWebhookRequest | HandoffCreatedEventWebhookRequest | HandoffAcceptedEventWebhookRequest | HandoffReleasedEventWebhookRequest | LeadErasedEventWebhookRequest;
/**
 * The body of a `lead.created` delivery (also docs/schemas/lead.created.schema.json).
 */
export type EventLeadCreated = {
    id: string;
    type: 'lead.created';
    version: '1';
    occurred_at: Timestamp;
    org_id: string;
    /**
     * Properties not listed here may be added; ignore the ones you do not know.
     */
    data: {
        lead: Lead;
    };
};
/**
 * The body of a `lead.updated` delivery (also docs/schemas/lead.updated.schema.json).
 */
export type EventLeadUpdated = {
    id: string;
    type: 'lead.updated';
    version: '1';
    occurred_at: Timestamp;
    org_id: string;
    /**
     * Properties not listed here may be added; ignore the ones you do not know.
     */
    data: {
        lead: Lead;
        previous: LeadChanges;
    };
};
/**
 * The body of a `lead.stage_changed` delivery (also docs/schemas/lead.stage_changed.schema.json).
 */
export type EventLeadStageChanged = {
    id: string;
    type: 'lead.stage_changed';
    version: '1';
    occurred_at: Timestamp;
    org_id: string;
    /**
     * Properties not listed here may be added; ignore the ones you do not know.
     */
    data: {
        lead: Lead;
        previous_stage: Stage;
        previous: LeadChanges;
    };
};
/**
 * The body of a `lead.qualified` delivery (also docs/schemas/lead.qualified.schema.json).
 */
export type EventLeadQualified = {
    id: string;
    type: 'lead.qualified';
    version: '1';
    occurred_at: Timestamp;
    org_id: string;
    /**
     * Properties not listed here may be added; ignore the ones you do not know.
     */
    data: {
        lead: Lead;
        previous_stage: Stage;
        previous: LeadChanges;
    };
};
/**
 * The body of a `handoff.created` delivery (also docs/schemas/handoff.created.schema.json).
 */
export type EventHandoffCreated = {
    id: string;
    type: 'handoff.created';
    version: '1';
    occurred_at: Timestamp;
    org_id: string;
    /**
     * Properties not listed here may be added; ignore the ones you do not know.
     */
    data: {
        lead: Lead;
        handoff: Handoff;
    };
};
/**
 * The body of a `handoff.accepted` delivery (also docs/schemas/handoff.accepted.schema.json).
 */
export type EventHandoffAccepted = {
    id: string;
    type: 'handoff.accepted';
    version: '1';
    occurred_at: Timestamp;
    org_id: string;
    /**
     * Properties not listed here may be added; ignore the ones you do not know.
     */
    data: {
        lead: Lead;
        handoff: Handoff;
    };
};
/**
 * The body of a `handoff.released` delivery (also docs/schemas/handoff.released.schema.json).
 */
export type EventHandoffReleased = {
    id: string;
    type: 'handoff.released';
    version: '1';
    occurred_at: Timestamp;
    org_id: string;
    /**
     * Properties not listed here may be added; ignore the ones you do not know.
     */
    data: {
        lead: Lead;
        handoff: Handoff;
    };
};
/**
 * The body of a `lead.erased` delivery (also docs/schemas/lead.erased.schema.json).
 */
export type EventLeadErased = {
    id: string;
    type: 'lead.erased';
    version: '1';
    occurred_at: Timestamp;
    org_id: string;
    /**
     * Properties not listed here may be added; ignore the ones you do not know.
     */
    data: {
        lead: {
            id: string;
        };
        erased_at: Timestamp;
    };
};
/**
 * An event whose lead was erased, as the feed and the console show it: the envelope's own fields and the lead's id.
 */
export type ErasedEvent = {
    id: string;
    type: EventType;
    version: '1';
    occurred_at: Timestamp;
    org_id: string;
    data: {
        lead: {
            id: string;
        };
    };
    erased: true;
};
export type Error = {
    error: string;
};
/**
 * UTC, millisecond precision.
 */
export type Timestamp = string;
export type Stage = 'qualifying' | 'qualified' | 'closed';
export type ExternalRef = {
    system: string;
    id: string;
    url: string | null;
};
export type ExternalRefInput = {
    system: string;
    id: string;
    /**
     * An absolute https url.
     */
    url?: string | null;
};
/**
 * Known keys are typed; other keys hold any JSON scalar.
 */
export type Profile = {
    budget?: string;
    bedrooms?: number;
    area?: string;
    [key: string]: string | number | boolean | string | number | undefined;
};
/**
 * Properties not listed here may be added; ignore the ones you do not know.
 */
export type Lead = {
    id: string;
    name: string;
    email: string | null;
    phone: string;
    channel: string;
    qualification_stage: Stage;
    route_target: string | null;
    profile: Profile;
    external_ref: null | ExternalRef;
    ai_paused: boolean;
    conversation_url: string;
    created_at: Timestamp;
    updated_at: Timestamp;
    /**
     * 1 at creation, plus 1 with every change; apply an event only when it is higher than the one you stored.
     */
    revision: number;
};
/**
 * `data.previous`: the value before the change of every lead field the change altered. For
 * `profile`, only the keys that changed, each with its previous value (`null` for a key the
 * change added).
 *
 */
export type LeadChanges = {
    name?: string;
    email?: string | null;
    phone?: string;
    channel?: string;
    qualification_stage?: Stage;
    route_target?: string | null;
    profile?: {
        [key: string]: string | number | boolean | null;
    };
    external_ref?: null | ExternalRef;
    ai_paused?: boolean;
};
export type LeadResponse = {
    lead: Lead;
};
export type NewLead = {
    name: string;
    /**
     * `+` and 7..15 digits (spaces, dashes and parentheses are removed first).
     */
    phone: string;
    email?: string | null;
    channel?: string | null;
    profile?: Profile;
    external_ref?: ExternalRefInput;
    route_target?: string | null;
};
/**
 * At least one of the three fields, not all null.
 */
export type PublicPatch = {
    external_ref?: ExternalRefInput;
    ai_paused?: boolean;
    status?: 'closed';
};
export type InternalPatch = {
    name?: string;
    email?: string | null;
    phone?: string;
    /**
     * Merged key by key; null removes a key.
     */
    profile?: {
        [key: string]: unknown;
    };
    route_target?: string | null;
    qualification_stage?: Stage;
};
export type InboundContact = {
    name: string;
    phone: string;
    email?: string | null;
    channel: string;
    profile?: Profile;
};
export type Org = {
    id: string;
    name: string;
    created_at: Timestamp;
};
export type Token = {
    id: string;
    name: string | null;
    created_at: Timestamp;
};
export type EventType = 'lead.created' | 'lead.updated' | 'lead.stage_changed' | 'lead.qualified' | 'handoff.created' | 'handoff.accepted' | 'handoff.released' | 'lead.erased';
export type WebhookInput = {
    /**
     * https only; every resolved address must be public. Required for an `https` destination (the default), absent or `null` for any other.
     */
    url?: string | null;
    event_types: Array<EventType>;
    enabled?: boolean;
    max_per_second?: MaxPerSecond;
    ordering?: Ordering;
    /**
     * An endpoint's note for its administrators (no control characters); absent keeps the saved one.
     */
    description?: string;
    /**
     * The receiver's own headers (docs/receivers.md, "Your own headers and credentials"), sent with every request to the endpoint; absent keeps the saved ones, `[]` removes them. A secret value given as `********` keeps the stored one. 422 naming the header.
     */
    headers?: Array<ReceiverHeader>;
    /**
     * How requests authenticate to the receiver; absent keeps the saved auth, `null` removes it. A secret given as `********` keeps the stored one. 422 naming the field.
     */
    auth?: null | ReceiverAuth;
    /**
     * Which subscribed events the endpoint gets (docs/api.md, "Filters"): `null` every one, else a JSON object of dotted paths and operators matched against the event's envelope. Absent keeps the saved filter. 422 `Invalid filter at <path>: …`.
     */
    filter?: {
        [key: string]: unknown;
    } | null;
    destination?: Destination;
};
/**
 * Where the endpoint sends (docs/destinations.md). `https` (the default when absent): to `url`. `amqp`: a persistent message on a RabbitMQ exchange of the receiver's, confirmed by the broker. `sqs`: `SendMessage` to a queue (a FIFO queue, whose url ends in `.fifo`, groups by the lead and deduplicates by the delivery id). `eventbridge`: `PutEvents` with the envelope as `Detail` and the event type as `DetailType`. `s3`: one object per delivery at `{prefix}{org_id}/{yyyy}/{mm}/{dd}/{event_id}.json`. Every type carries the webhook's body bytes and the signature and delivery headers (as AMQP headers, message attributes or object metadata; EventBridge: the envelope only). Addresses (`url`, `endpoint_url`) are held to the endpoint url's rules; `amqp://` without TLS is refused outside `QUALIFIER_WEBHOOK_ALLOW_CIDRS`. Secrets (the amqp url's password, the AWS `credentials`) are sealed at rest and shown as `********`; sent back so, they keep the stored ones. Headers and `auth` are for `https` only. 422 naming the field.
 */
export type Destination = {
    type: 'https' | 'amqp' | 'sqs' | 'eventbridge' | 's3';
    /**
     * amqp: `amqp[s]://user:password@host[:port][/vhost]`, no query; port 1024-65535.
     */
    url?: string;
    /**
     * amqp: printable ASCII; empty is the broker's default exchange.
     */
    exchange?: string;
    /**
     * amqp.
     */
    routing_key?: string;
    /**
     * sqs: the queue's https url.
     */
    queue_url?: string;
    /**
     * eventbridge: the bus's name or ARN.
     */
    event_bus?: string;
    /**
     * eventbridge: the entries' Source; not `aws.`…
     */
    source?: string;
    /**
     * s3.
     */
    bucket?: string;
    /**
     * s3: the keys' prefix; not starting with `/`.
     */
    prefix?: string;
    /**
     * sqs, eventbridge, s3: the AWS region (eu-west-1).
     */
    region?: string;
    /**
     * sqs, eventbridge, s3: an AWS-compatible service's https address; `null`: AWS's own for the region.
     */
    endpoint_url?: string | null;
    /**
     * sqs, eventbridge, s3: the endpoint's own keys; `null`: the worker's AWS environment.
     */
    credentials?: null | {
        access_key_id: string;
        secret_access_key: string;
    };
};
export type ReceiverHeader = {
    /**
     * An HTTP token, unique whatever its case; not Host, Content-Type, Content-Length, Transfer-Encoding, Connection, User-Agent, X-Qualifier-*, webhook-*, nor Authorization when the endpoint has `auth`.
     */
    name: string;
    /**
     * No control characters; `********` when secret, as shown.
     */
    value: string;
    /**
     * Sealed at rest and shown as `********`.
     */
    secret?: boolean;
};
/**
 * `basic` (RFC 7617), `bearer`, or OAuth 2 client credentials (RFC 6749 section 4.4: the worker fetches a token from `token_url`, keeps it until `expires_in` less 30 s, and on a 401 fetches a new one and resends within the same attempt). Secrets (`password`, `token`, `client_secret`) are shown as `********`.
 */
export type ReceiverAuth = {
    type: 'basic' | 'bearer' | 'oauth2_client_credentials';
    /**
     * basic; no `:`.
     */
    username?: string;
    /**
     * basic.
     */
    password?: string;
    /**
     * bearer; no spaces.
     */
    token?: string;
    /**
     * oauth2_client_credentials; https, held to the endpoint url's address rules.
     */
    token_url?: string;
    client_id?: string;
    client_secret?: string;
    scope?: string | null;
    audience?: string | null;
    client_auth?: 'body' | 'basic';
};
/**
 * A throttle (docs/delivery.md, "Throttle and order"): the endpoint receives at most this many requests in any one-second window, plus one, across every webhook-delivery replica (deliveries, replays, test events and probes together). Waiting for it spends no attempt, is not a failure and does not count towards the endpoint's health; deliveries wait in the order their events occurred, and a new value applies to those already waiting within a second. `null` (the default): no throttle. Anything else: 422 naming `max_per_second`.
 */
export type MaxPerSecond = number | null;
/**
 * `none` (the default): each delivery goes as soon as it can, so a retried event may arrive after a later one of its lead. `per_lead`: one lead's deliveries go one at a time in the order the events occurred; a delivery waits (without spending an attempt) while an earlier delivery of its lead is pending, retrying or held, and goes once that one succeeded, went dead or was skipped. Leads never wait for each other. Replays and test events are sent outside the order. Anything else: 422 naming `ordering`.
 */
export type Ordering = 'none' | 'per_lead';
/**
 * An endpoint (the `webhook` routes show the org's primary one, its oldest). Its signing secret is never shown again after its creation or rotation.
 */
export type Webhook = {
    id: string;
    description: string;
    /**
     * `null` for a destination other than `https`.
     */
    url: string | null;
    destination: Destination;
    event_types: Array<EventType>;
    enabled: boolean;
    created_at: Timestamp;
    updated_at: Timestamp;
    max_per_second: MaxPerSecond;
    ordering: Ordering;
    headers?: Array<ReceiverHeader>;
    auth?: null | ReceiverAuth;
    /**
     * The endpoint's filter as saved; `null` none.
     */
    filter?: {
        [key: string]: unknown;
    } | null;
    /**
     * Events the filter left out in the current hour and the 23 before it (with `health`).
     */
    filtered_last_24h?: number;
    /**
     * The client certificate presented to the endpoint (mutual TLS), never its key; `null` when none is set.
     */
    client_certificate?: null | {
        subject: string;
        issuer: string;
        not_after: Timestamp;
    };
    health?: EndpointHealth;
};
/**
 * The endpoint's health (docs/delivery.md, "Endpoint health"). `failing`: deliveries wait without using attempts while probes (test events marked `X-Qualifier-Probe: true`) run at growing intervals; the first 2xx makes it `healthy` and everything that waited is sent, oldest first. `disabled`: failing for `QUALIFIER_ENDPOINT_DISABLE_AFTER_S` or answered `410 Gone`; `enabled` is false until a PUT with `enabled: true`. `last_success_at` is the success that last ended a run of failures (a clean endpoint's successes are not written, to keep the hot path free).
 */
export type EndpointHealth = {
    state: 'healthy' | 'failing' | 'disabled';
    failing_since: Timestamp | null;
    last_success_at: Timestamp | null;
    last_failure_at: Timestamp | null;
    last_error: string | null;
    consecutive_failures: number;
    next_probe_at: Timestamp | null;
    disabled_reason: string | null;
};
export type SigningSecret = string;
/**
 * The same key in the form Standard Webhooks libraries take: `whsec_` and the standard base64 of the UTF-8 bytes of `signing_secret`.
 */
export type StandardWebhooksSecret = string;
export type Handoff = {
    id: string;
    lead_id: string;
    state: 'requested' | 'accepted' | 'released';
    reason: string | null;
    operator: string | null;
    requested_at: Timestamp;
    accepted_at: null | Timestamp;
    released_at: null | Timestamp;
};
export type DeliveryStatus = 'pending' | 'succeeded' | 'failed' | 'dead' | 'skipped';
export type Delivery = {
    /**
     * The `X-Qualifier-Delivery` header value: one per event and endpoint.
     */
    id: string;
    /**
     * The endpoint it goes to.
     */
    endpoint_id: string;
    event_id: string;
    event_type: EventType;
    status: DeliveryStatus;
    attempts: number;
    last_status_code: number | null;
    last_error: string | null;
    created_at: Timestamp;
    updated_at: Timestamp;
    /**
     * Present when the event's lead was erased: its payload is the reduced envelope and it is never sent again.
     */
    erased?: true;
    /**
     * Present while a delivery that is neither finished nor retrying waits: `throttle`, for its turn under the endpoint's `max_per_second`; `earlier_delivery`, for an earlier delivery of its lead (`ordering: per_lead`). Neither spends an attempt.
     */
    waiting_for?: 'throttle' | 'earlier_delivery';
};
export type DeliveryDetail = Delivery & {
    attempt_log: Array<{
        attempt: number;
        started_at: Timestamp;
        duration_ms: number;
        status_code: number | null;
        error: string | null;
        /**
         * Present when the attempt got no HTTP answer (absent on success, on an HTTP status, and in entries recorded before kinds were kept): why, as a kind a program can branch on; `error` is the line for people. `tls` includes a client certificate the receiver refused; `proxy` is the egress proxy failing, not the endpoint; `token_request` the endpoint's OAuth 2 token server giving no token (docs/receivers.md).
         */
        error_kind?: 'timeout' | 'connect' | 'tls' | 'refused_address' | 'invalid_url' | 'request' | 'secret_unreadable' | 'proxy' | 'token_request';
        /**
         * The first 4 KiB of the receiver's answer, read as UTF-8 with every control character but newline and tab removed. Absent when it answered nothing, and in entries recorded before answers were kept.
         */
        response_body?: string;
        /**
         * The headers the attempt was sent with, in order, as [name, value] pairs, signatures included (never the secret). Absent in entries recorded before headers were kept, and for attempts that sent no request.
         */
        request_headers?: Array<[
            string,
            string
        ]>;
    }>;
};
/**
 * Entity tags (`"7"`, comma-separated) or `*`. Weak tags never match; a value naming none of the lead's tags matches nothing (412).
 */
export type IfMatch = string;
/**
 * Entity tags or `*`; compared weakly.
 */
export type IfNoneMatch = string;
export type WebhookEvent = EventType;
/**
 * `sha256=` + lowercase hex HMAC-SHA256 of the raw body, keyed with the signing secret.
 */
export type WebhookSignature = string;
/**
 * The delivery id, the same on every retry and replay; dedupe on it.
 */
export type WebhookDelivery = string;
export type WebhookTimestamp = Timestamp;
/**
 * Equal to X-Qualifier-Delivery.
 */
export type StandardWebhookId = string;
/**
 * The attempt's time in Unix seconds.
 */
export type StandardWebhookTimestamp = string;
/**
 * Space-separated `v1,<base64 HMAC-SHA256>` over `{id}.{timestamp}.{body}`: the current secret's, and during a rotation's window the previous secret's second.
 */
export type StandardWebhookSignature = string;
/**
 * `true` on a test event (`POST …/webhook/test`).
 */
export type WebhookTest = 'true';
/**
 * 1..255 visible ASCII characters. A repeat with the same key, method, path and body within 24 hours gets the first response again (status, body, `Location`) with `Idempotency-Replayed: true`, and changes and emits nothing. The same key with another request: 422 `Idempotency-Key was used with a different request`; while the first is still being processed: 409 `A request with this Idempotency-Key is in progress`; a malformed key: 422 `Invalid Idempotency-Key`. A 5xx is not kept.
 */
export type IdempotencyKey = string;
/**
 * An org id; anything that is not an existing org's UUID is `Org not found`.
 */
export type Org2 = string;
/**
 * An endpoint id of the org; anything else (another org's endpoint included) is `Endpoint not found`.
 */
export type EndpointId = string;
export type ListLeadsData = {
    body?: never;
    path?: never;
    query?: {
        /**
         * Inclusive lower bound on `updated_at` (`Z` or an offset).
         */
        updated_since?: string;
        limit?: number;
        /**
         * `next_cursor` of the previous page, as given.
         */
        cursor?: string;
    };
    url: '/api/v1/leads';
};
export type ListLeadsErrors = {
    /**
     * `Unauthorized`: token missing, malformed, unknown or revoked.
     */
    401: Error;
    /**
     * A one-line message naming the invalid field (docs/api.md lists the messages).
     */
    422: Error;
    /**
     * `Rate limit exceeded`
     */
    429: Error;
    /**
     * `Internal server error` (the cause is logged with the request id, never returned).
     */
    500: Error;
    /**
     * `Service unavailable`: PostgreSQL (or, for `/readyz`, RabbitMQ) cannot be reached.
     */
    503: Error;
};
export type ListLeadsError = ListLeadsErrors[keyof ListLeadsErrors];
export type ListLeadsResponses = {
    /**
     * A page of leads; `next_cursor` is null on the last page. A page holds at most `QUALIFIER_MAX_PAGE_BYTES` (default 1 MiB) of JSON, so it may end before `limit` leads, at a whole lead; `next_cursor` continues from there.
     */
    200: {
        leads: Array<Lead>;
        next_cursor: string | null;
    };
};
export type ListLeadsResponse = ListLeadsResponses[keyof ListLeadsResponses];
export type CreateLeadData = {
    body: NewLead;
    headers?: {
        /**
         * 1..255 visible ASCII characters. A repeat with the same key, method, path and body within 24 hours gets the first response again (status, body, `Location`) with `Idempotency-Replayed: true`, and changes and emits nothing. The same key with another request: 422 `Idempotency-Key was used with a different request`; while the first is still being processed: 409 `A request with this Idempotency-Key is in progress`; a malformed key: 422 `Invalid Idempotency-Key`. A 5xx is not kept.
         */
        'Idempotency-Key'?: string;
    };
    path?: never;
    query?: never;
    url: '/api/v1/leads';
};
export type CreateLeadErrors = {
    /**
     * `Invalid JSON body`
     */
    400: Error;
    /**
     * `Unauthorized`: token missing, malformed, unknown or revoked.
     */
    401: Error;
    /**
     * `Request timeout`: the body had not fully arrived 10 s after the request's head. The connection is closed.
     */
    408: Error;
    /**
     * `Lead already exists`: the phone already has a lead in this org; `Location` names it.
     */
    409: Error;
    /**
     * `Request body too large` (over 64 KiB).
     */
    413: Error;
    /**
     * `Content-Type must be application/json`
     */
    415: Error;
    /**
     * A one-line message naming the invalid field (docs/api.md lists the messages).
     */
    422: Error;
    /**
     * `Rate limit exceeded`
     */
    429: Error;
    /**
     * `Internal server error` (the cause is logged with the request id, never returned).
     */
    500: Error;
    /**
     * `Service unavailable`: PostgreSQL (or, for `/readyz`, RabbitMQ) cannot be reached.
     */
    503: Error;
};
export type CreateLeadError = CreateLeadErrors[keyof CreateLeadErrors];
export type CreateLeadResponses = {
    /**
     * Created.
     */
    201: LeadResponse;
};
export type CreateLeadResponse = CreateLeadResponses[keyof CreateLeadResponses];
export type EraseLeadData = {
    body?: never;
    path: {
        /**
         * A lead id; anything that is not a UUID of this org's lead is `Lead not found`.
         */
        leadId: string;
    };
    query?: never;
    url: '/api/v1/leads/{leadId}';
};
export type EraseLeadErrors = {
    /**
     * `Unauthorized`: token missing, malformed, unknown or revoked.
     */
    401: Error;
    /**
     * `Lead not found`, `Org not found`, `Token not found`, `Handoff not found`, `Delivery not found`, `Webhook not configured` or `Not found`.
     */
    404: Error;
    /**
     * `Rate limit exceeded`
     */
    429: Error;
    /**
     * `Internal server error` (the cause is logged with the request id, never returned).
     */
    500: Error;
    /**
     * `Service unavailable`: PostgreSQL (or, for `/readyz`, RabbitMQ) cannot be reached.
     */
    503: Error;
};
export type EraseLeadError = EraseLeadErrors[keyof EraseLeadErrors];
export type EraseLeadResponses = {
    /**
     * Erased. No body.
     */
    204: void;
};
export type EraseLeadResponse = EraseLeadResponses[keyof EraseLeadResponses];
export type GetLeadData = {
    body?: never;
    headers?: {
        /**
         * Entity tags or `*`; compared weakly.
         */
        'If-None-Match'?: string;
    };
    path: {
        /**
         * A lead id; anything that is not a UUID of this org's lead is `Lead not found`.
         */
        leadId: string;
    };
    query?: never;
    url: '/api/v1/leads/{leadId}';
};
export type GetLeadErrors = {
    /**
     * `Unauthorized`: token missing, malformed, unknown or revoked.
     */
    401: Error;
    /**
     * `Lead not found`, `Org not found`, `Token not found`, `Handoff not found`, `Delivery not found`, `Webhook not configured` or `Not found`.
     */
    404: Error;
    /**
     * `Rate limit exceeded`
     */
    429: Error;
    /**
     * `Internal server error` (the cause is logged with the request id, never returned).
     */
    500: Error;
    /**
     * `Service unavailable`: PostgreSQL (or, for `/readyz`, RabbitMQ) cannot be reached.
     */
    503: Error;
};
export type GetLeadError = GetLeadErrors[keyof GetLeadErrors];
export type GetLeadResponses = {
    /**
     * The lead.
     */
    200: LeadResponse;
};
export type GetLeadResponse = GetLeadResponses[keyof GetLeadResponses];
export type PatchLeadData = {
    body: PublicPatch;
    headers?: {
        /**
         * 1..255 visible ASCII characters. A repeat with the same key, method, path and body within 24 hours gets the first response again (status, body, `Location`) with `Idempotency-Replayed: true`, and changes and emits nothing. The same key with another request: 422 `Idempotency-Key was used with a different request`; while the first is still being processed: 409 `A request with this Idempotency-Key is in progress`; a malformed key: 422 `Invalid Idempotency-Key`. A 5xx is not kept.
         */
        'Idempotency-Key'?: string;
        /**
         * Entity tags (`"7"`, comma-separated) or `*`. Weak tags never match; a value naming none of the lead's tags matches nothing (412).
         */
        'If-Match'?: string;
    };
    path: {
        /**
         * A lead id; anything that is not a UUID of this org's lead is `Lead not found`.
         */
        leadId: string;
    };
    query?: never;
    url: '/api/v1/leads/{leadId}';
};
export type PatchLeadErrors = {
    /**
     * `Invalid JSON body`
     */
    400: Error;
    /**
     * `Unauthorized`: token missing, malformed, unknown or revoked.
     */
    401: Error;
    /**
     * `Lead not found`, `Org not found`, `Token not found`, `Handoff not found`, `Delivery not found`, `Webhook not configured` or `Not found`.
     */
    404: Error;
    /**
     * `Request timeout`: the body had not fully arrived 10 s after the request's head. The connection is closed.
     */
    408: Error;
    /**
     * A state conflict, e.g. `Handoff already open` or `Delivery is still in progress`.
     */
    409: Error;
    /**
     * `Lead has changed`: `If-Match` did not name the lead's revision; nothing was written. `ETag` is the current one.
     */
    412: Error;
    /**
     * `Request body too large` (over 64 KiB).
     */
    413: Error;
    /**
     * `Content-Type must be application/json`
     */
    415: Error;
    /**
     * A one-line message naming the invalid field (docs/api.md lists the messages).
     */
    422: Error;
    /**
     * `Rate limit exceeded`
     */
    429: Error;
    /**
     * `Internal server error` (the cause is logged with the request id, never returned).
     */
    500: Error;
    /**
     * `Service unavailable`: PostgreSQL (or, for `/readyz`, RabbitMQ) cannot be reached.
     */
    503: Error;
};
export type PatchLeadError = PatchLeadErrors[keyof PatchLeadErrors];
export type PatchLeadResponses = {
    /**
     * The lead.
     */
    200: LeadResponse;
};
export type PatchLeadResponse = PatchLeadResponses[keyof PatchLeadResponses];
export type ListEventsData = {
    body?: never;
    path?: never;
    query?: {
        /**
         * `next_cursor` of the previous page, as given.
         */
        after?: string;
        limit?: number;
        type?: EventType;
    };
    url: '/api/v1/events';
};
export type ListEventsErrors = {
    /**
     * `Unauthorized`: token missing, malformed, unknown or revoked.
     */
    401: Error;
    /**
     * `Cursor expired`: the cursor points before what retention keeps; start again without `after` (and resync with `/api/v1/leads`).
     */
    410: Error;
    /**
     * A one-line message naming the invalid field (docs/api.md lists the messages).
     */
    422: Error;
    /**
     * `Rate limit exceeded`
     */
    429: Error;
    /**
     * `Internal server error` (the cause is logged with the request id, never returned).
     */
    500: Error;
    /**
     * `Service unavailable`: PostgreSQL (or, for `/readyz`, RabbitMQ) cannot be reached.
     */
    503: Error;
};
export type ListEventsError = ListEventsErrors[keyof ListEventsErrors];
export type ListEventsResponses = {
    /**
     * A page of events; `next_cursor` is always present (on an empty page, the cursor sent).
     */
    200: {
        events: Array<EventLeadCreated | EventLeadUpdated | EventLeadStageChanged | EventLeadQualified | EventHandoffCreated | EventHandoffAccepted | EventHandoffReleased | EventLeadErased | ErasedEvent>;
        next_cursor: string;
    };
};
export type ListEventsResponse = ListEventsResponses[keyof ListEventsResponses];
export type CreateOrgData = {
    body: {
        name: string;
    };
    path?: never;
    query?: never;
    url: '/internal/v1/orgs';
};
export type CreateOrgErrors = {
    /**
     * `Invalid JSON body`
     */
    400: Error;
    /**
     * `Unauthorized`: the internal token is missing or wrong.
     */
    401: Error;
    /**
     * `Request timeout`: the body had not fully arrived 10 s after the request's head. The connection is closed.
     */
    408: Error;
    /**
     * `Request body too large` (over 64 KiB).
     */
    413: Error;
    /**
     * `Content-Type must be application/json`
     */
    415: Error;
    /**
     * A one-line message naming the invalid field (docs/api.md lists the messages).
     */
    422: Error;
    /**
     * `Internal server error` (the cause is logged with the request id, never returned).
     */
    500: Error;
    /**
     * `Service unavailable`: PostgreSQL (or, for `/readyz`, RabbitMQ) cannot be reached.
     */
    503: Error;
};
export type CreateOrgError = CreateOrgErrors[keyof CreateOrgErrors];
export type CreateOrgResponses = {
    /**
     * Created.
     */
    201: {
        org: Org;
    };
};
export type CreateOrgResponse = CreateOrgResponses[keyof CreateOrgResponses];
export type CreateTokenData = {
    body?: {
        name?: string | null;
    };
    path: {
        /**
         * An org id; anything that is not an existing org's UUID is `Org not found`.
         */
        org: string;
    };
    query?: never;
    url: '/internal/v1/orgs/{org}/tokens';
};
export type CreateTokenErrors = {
    /**
     * `Invalid JSON body`
     */
    400: Error;
    /**
     * `Unauthorized`: the internal token is missing or wrong.
     */
    401: Error;
    /**
     * `Lead not found`, `Org not found`, `Token not found`, `Handoff not found`, `Delivery not found`, `Webhook not configured` or `Not found`.
     */
    404: Error;
    /**
     * `Request timeout`: the body had not fully arrived 10 s after the request's head. The connection is closed.
     */
    408: Error;
    /**
     * `Request body too large` (over 64 KiB).
     */
    413: Error;
    /**
     * `Content-Type must be application/json`
     */
    415: Error;
    /**
     * A one-line message naming the invalid field (docs/api.md lists the messages).
     */
    422: Error;
    /**
     * `Internal server error` (the cause is logged with the request id, never returned).
     */
    500: Error;
    /**
     * `Service unavailable`: PostgreSQL (or, for `/readyz`, RabbitMQ) cannot be reached.
     */
    503: Error;
};
export type CreateTokenError = CreateTokenErrors[keyof CreateTokenErrors];
export type CreateTokenResponses = {
    /**
     * Created.
     */
    201: {
        token: Token;
        secret: string;
    };
};
export type CreateTokenResponse = CreateTokenResponses[keyof CreateTokenResponses];
export type RevokeTokenData = {
    body?: never;
    path: {
        /**
         * An org id; anything that is not an existing org's UUID is `Org not found`.
         */
        org: string;
        id: string;
    };
    query?: never;
    url: '/internal/v1/orgs/{org}/tokens/{id}';
};
export type RevokeTokenErrors = {
    /**
     * `Unauthorized`: the internal token is missing or wrong.
     */
    401: Error;
    /**
     * `Lead not found`, `Org not found`, `Token not found`, `Handoff not found`, `Delivery not found`, `Webhook not configured` or `Not found`.
     */
    404: Error;
    /**
     * `Internal server error` (the cause is logged with the request id, never returned).
     */
    500: Error;
    /**
     * `Service unavailable`: PostgreSQL (or, for `/readyz`, RabbitMQ) cannot be reached.
     */
    503: Error;
};
export type RevokeTokenError = RevokeTokenErrors[keyof RevokeTokenErrors];
export type RevokeTokenResponses = {
    /**
     * Revoked.
     */
    204: void;
};
export type RevokeTokenResponse = RevokeTokenResponses[keyof RevokeTokenResponses];
export type GetWebhookData = {
    body?: never;
    path: {
        /**
         * An org id; anything that is not an existing org's UUID is `Org not found`.
         */
        org: string;
    };
    query?: never;
    url: '/internal/v1/orgs/{org}/webhook';
};
export type GetWebhookErrors = {
    /**
     * `Unauthorized`: the internal token is missing or wrong.
     */
    401: Error;
    /**
     * `Lead not found`, `Org not found`, `Token not found`, `Handoff not found`, `Delivery not found`, `Webhook not configured` or `Not found`.
     */
    404: Error;
    /**
     * `Internal server error` (the cause is logged with the request id, never returned).
     */
    500: Error;
    /**
     * `Service unavailable`: PostgreSQL (or, for `/readyz`, RabbitMQ) cannot be reached.
     */
    503: Error;
};
export type GetWebhookError = GetWebhookErrors[keyof GetWebhookErrors];
export type GetWebhookResponses = {
    /**
     * The webhook, without its secret.
     */
    200: {
        webhook: Webhook;
    };
};
export type GetWebhookResponse = GetWebhookResponses[keyof GetWebhookResponses];
export type PutWebhookData = {
    body: WebhookInput;
    path: {
        /**
         * An org id; anything that is not an existing org's UUID is `Org not found`.
         */
        org: string;
    };
    query?: never;
    url: '/internal/v1/orgs/{org}/webhook';
};
export type PutWebhookErrors = {
    /**
     * `Invalid JSON body`
     */
    400: Error;
    /**
     * `Unauthorized`: the internal token is missing or wrong.
     */
    401: Error;
    /**
     * `Lead not found`, `Org not found`, `Token not found`, `Handoff not found`, `Delivery not found`, `Webhook not configured` or `Not found`.
     */
    404: Error;
    /**
     * `Request timeout`: the body had not fully arrived 10 s after the request's head. The connection is closed.
     */
    408: Error;
    /**
     * `Request body too large` (over 64 KiB).
     */
    413: Error;
    /**
     * `Content-Type must be application/json`
     */
    415: Error;
    /**
     * A one-line message naming the invalid field (docs/api.md lists the messages).
     */
    422: Error;
    /**
     * `Internal server error` (the cause is logged with the request id, never returned).
     */
    500: Error;
    /**
     * `Service unavailable`: PostgreSQL (or, for `/readyz`, RabbitMQ) cannot be reached.
     */
    503: Error;
};
export type PutWebhookError = PutWebhookErrors[keyof PutWebhookErrors];
export type PutWebhookResponses = {
    /**
     * Saved.
     */
    200: {
        webhook: Webhook;
        signing_secret?: SigningSecret;
        standard_webhooks_secret?: StandardWebhooksSecret;
    };
};
export type PutWebhookResponse = PutWebhookResponses[keyof PutWebhookResponses];
export type RotateSecretData = {
    body?: {
        grace_seconds?: number;
    };
    path: {
        /**
         * An org id; anything that is not an existing org's UUID is `Org not found`.
         */
        org: string;
    };
    query?: never;
    url: '/internal/v1/orgs/{org}/webhook/rotate-secret';
};
export type RotateSecretErrors = {
    /**
     * `Invalid JSON body`
     */
    400: Error;
    /**
     * `Unauthorized`: the internal token is missing or wrong.
     */
    401: Error;
    /**
     * `Lead not found`, `Org not found`, `Token not found`, `Handoff not found`, `Delivery not found`, `Webhook not configured` or `Not found`.
     */
    404: Error;
    /**
     * `Request timeout`: the body had not fully arrived 10 s after the request's head. The connection is closed.
     */
    408: Error;
    /**
     * `Request body too large` (over 64 KiB).
     */
    413: Error;
    /**
     * `Content-Type must be application/json`
     */
    415: Error;
    /**
     * A one-line message naming the invalid field (docs/api.md lists the messages).
     */
    422: Error;
    /**
     * `Internal server error` (the cause is logged with the request id, never returned).
     */
    500: Error;
    /**
     * `Service unavailable`: PostgreSQL (or, for `/readyz`, RabbitMQ) cannot be reached.
     */
    503: Error;
};
export type RotateSecretError = RotateSecretErrors[keyof RotateSecretErrors];
export type RotateSecretResponses = {
    /**
     * The new secret (shown once).
     */
    200: {
        signing_secret: SigningSecret;
        standard_webhooks_secret: StandardWebhooksSecret;
        /**
         * When the previous secret stops signing; null with no window.
         */
        previous_secret_expires_at: Timestamp | null;
    };
};
export type RotateSecretResponse = RotateSecretResponses[keyof RotateSecretResponses];
export type SendTestEventData = {
    body?: {
        /**
         * Default: the first type the webhook is subscribed to.
         */
        event_type?: EventType;
    };
    path: {
        /**
         * An org id; anything that is not an existing org's UUID is `Org not found`.
         */
        org: string;
    };
    query?: never;
    url: '/internal/v1/orgs/{org}/webhook/test';
};
export type SendTestEventErrors = {
    /**
     * `Invalid JSON body`
     */
    400: Error;
    /**
     * `Unauthorized`: the internal token is missing or wrong.
     */
    401: Error;
    /**
     * `Lead not found`, `Org not found`, `Token not found`, `Handoff not found`, `Delivery not found`, `Webhook not configured` or `Not found`.
     */
    404: Error;
    /**
     * `Request timeout`: the body had not fully arrived 10 s after the request's head. The connection is closed.
     */
    408: Error;
    /**
     * A state conflict, e.g. `Handoff already open` or `Delivery is still in progress`.
     */
    409: Error;
    /**
     * `Request body too large` (over 64 KiB).
     */
    413: Error;
    /**
     * `Content-Type must be application/json`
     */
    415: Error;
    /**
     * A one-line message naming the invalid field (docs/api.md lists the messages).
     */
    422: Error;
    /**
     * `Rate limit exceeded`: a per-org quota of the action (docs/reliability.md, Strangers, quotas and pages).
     */
    429: Error;
    /**
     * `Internal server error` (the cause is logged with the request id, never returned).
     */
    500: Error;
    /**
     * `Service unavailable`: PostgreSQL (or, for `/readyz`, RabbitMQ) cannot be reached.
     */
    503: Error;
};
export type SendTestEventError = SendTestEventErrors[keyof SendTestEventErrors];
export type SendTestEventResponses = {
    /**
     * Queued; the delivery to follow in the delivery log.
     */
    202: {
        delivery: Delivery;
    };
};
export type SendTestEventResponse = SendTestEventResponses[keyof SendTestEventResponses];
export type ListEndpointsData = {
    body?: never;
    path: {
        /**
         * An org id; anything that is not an existing org's UUID is `Org not found`.
         */
        org: string;
    };
    query?: never;
    url: '/internal/v1/orgs/{org}/endpoints';
};
export type ListEndpointsErrors = {
    /**
     * `Unauthorized`: the internal token is missing or wrong.
     */
    401: Error;
    /**
     * `Lead not found`, `Org not found`, `Token not found`, `Handoff not found`, `Delivery not found`, `Webhook not configured` or `Not found`.
     */
    404: Error;
    /**
     * `Internal server error` (the cause is logged with the request id, never returned).
     */
    500: Error;
    /**
     * `Service unavailable`: PostgreSQL (or, for `/readyz`, RabbitMQ) cannot be reached.
     */
    503: Error;
};
export type ListEndpointsError = ListEndpointsErrors[keyof ListEndpointsErrors];
export type ListEndpointsResponses = {
    /**
     * The endpoints.
     */
    200: {
        endpoints: Array<Webhook>;
    };
};
export type ListEndpointsResponse = ListEndpointsResponses[keyof ListEndpointsResponses];
export type CreateEndpointData = {
    body: WebhookInput;
    path: {
        /**
         * An org id; anything that is not an existing org's UUID is `Org not found`.
         */
        org: string;
    };
    query?: never;
    url: '/internal/v1/orgs/{org}/endpoints';
};
export type CreateEndpointErrors = {
    /**
     * `Invalid JSON body`
     */
    400: Error;
    /**
     * `Unauthorized`: the internal token is missing or wrong.
     */
    401: Error;
    /**
     * `Lead not found`, `Org not found`, `Token not found`, `Handoff not found`, `Delivery not found`, `Webhook not configured` or `Not found`.
     */
    404: Error;
    /**
     * `Request timeout`: the body had not fully arrived 10 s after the request's head. The connection is closed.
     */
    408: Error;
    /**
     * A state conflict, e.g. `Handoff already open` or `Delivery is still in progress`.
     */
    409: Error;
    /**
     * `Request body too large` (over 64 KiB).
     */
    413: Error;
    /**
     * `Content-Type must be application/json`
     */
    415: Error;
    /**
     * A one-line message naming the invalid field (docs/api.md lists the messages).
     */
    422: Error;
    /**
     * `Internal server error` (the cause is logged with the request id, never returned).
     */
    500: Error;
    /**
     * `Service unavailable`: PostgreSQL (or, for `/readyz`, RabbitMQ) cannot be reached.
     */
    503: Error;
};
export type CreateEndpointError = CreateEndpointErrors[keyof CreateEndpointErrors];
export type CreateEndpointResponses = {
    /**
     * Created.
     */
    201: {
        endpoint: Webhook;
        signing_secret: SigningSecret;
        standard_webhooks_secret: StandardWebhooksSecret;
    };
};
export type CreateEndpointResponse = CreateEndpointResponses[keyof CreateEndpointResponses];
export type DeleteEndpointData = {
    body?: never;
    path: {
        /**
         * An org id; anything that is not an existing org's UUID is `Org not found`.
         */
        org: string;
        /**
         * An endpoint id of the org; anything else (another org's endpoint included) is `Endpoint not found`.
         */
        endpointId: string;
    };
    query?: never;
    url: '/internal/v1/orgs/{org}/endpoints/{endpointId}';
};
export type DeleteEndpointErrors = {
    /**
     * `Unauthorized`: the internal token is missing or wrong.
     */
    401: Error;
    /**
     * `Lead not found`, `Org not found`, `Token not found`, `Handoff not found`, `Delivery not found`, `Webhook not configured` or `Not found`.
     */
    404: Error;
    /**
     * `Internal server error` (the cause is logged with the request id, never returned).
     */
    500: Error;
    /**
     * `Service unavailable`: PostgreSQL (or, for `/readyz`, RabbitMQ) cannot be reached.
     */
    503: Error;
};
export type DeleteEndpointError = DeleteEndpointErrors[keyof DeleteEndpointErrors];
export type DeleteEndpointResponses = {
    /**
     * Deleted; its deliveries' history stays until retention.
     */
    204: void;
};
export type DeleteEndpointResponse = DeleteEndpointResponses[keyof DeleteEndpointResponses];
export type GetEndpointData = {
    body?: never;
    path: {
        /**
         * An org id; anything that is not an existing org's UUID is `Org not found`.
         */
        org: string;
        /**
         * An endpoint id of the org; anything else (another org's endpoint included) is `Endpoint not found`.
         */
        endpointId: string;
    };
    query?: never;
    url: '/internal/v1/orgs/{org}/endpoints/{endpointId}';
};
export type GetEndpointErrors = {
    /**
     * `Unauthorized`: the internal token is missing or wrong.
     */
    401: Error;
    /**
     * `Lead not found`, `Org not found`, `Token not found`, `Handoff not found`, `Delivery not found`, `Webhook not configured` or `Not found`.
     */
    404: Error;
    /**
     * `Internal server error` (the cause is logged with the request id, never returned).
     */
    500: Error;
    /**
     * `Service unavailable`: PostgreSQL (or, for `/readyz`, RabbitMQ) cannot be reached.
     */
    503: Error;
};
export type GetEndpointError = GetEndpointErrors[keyof GetEndpointErrors];
export type GetEndpointResponses = {
    /**
     * The endpoint, without its secret.
     */
    200: {
        endpoint: Webhook;
    };
};
export type GetEndpointResponse = GetEndpointResponses[keyof GetEndpointResponses];
export type PutEndpointData = {
    body: WebhookInput;
    path: {
        /**
         * An org id; anything that is not an existing org's UUID is `Org not found`.
         */
        org: string;
        /**
         * An endpoint id of the org; anything else (another org's endpoint included) is `Endpoint not found`.
         */
        endpointId: string;
    };
    query?: never;
    url: '/internal/v1/orgs/{org}/endpoints/{endpointId}';
};
export type PutEndpointErrors = {
    /**
     * `Invalid JSON body`
     */
    400: Error;
    /**
     * `Unauthorized`: the internal token is missing or wrong.
     */
    401: Error;
    /**
     * `Lead not found`, `Org not found`, `Token not found`, `Handoff not found`, `Delivery not found`, `Webhook not configured` or `Not found`.
     */
    404: Error;
    /**
     * `Request timeout`: the body had not fully arrived 10 s after the request's head. The connection is closed.
     */
    408: Error;
    /**
     * `Request body too large` (over 64 KiB).
     */
    413: Error;
    /**
     * `Content-Type must be application/json`
     */
    415: Error;
    /**
     * A one-line message naming the invalid field (docs/api.md lists the messages).
     */
    422: Error;
    /**
     * `Internal server error` (the cause is logged with the request id, never returned).
     */
    500: Error;
    /**
     * `Service unavailable`: PostgreSQL (or, for `/readyz`, RabbitMQ) cannot be reached.
     */
    503: Error;
};
export type PutEndpointError = PutEndpointErrors[keyof PutEndpointErrors];
export type PutEndpointResponses = {
    /**
     * Saved.
     */
    200: {
        endpoint: Webhook;
    };
};
export type PutEndpointResponse = PutEndpointResponses[keyof PutEndpointResponses];
export type RotateEndpointSecretData = {
    body?: {
        grace_seconds?: number;
    };
    path: {
        /**
         * An org id; anything that is not an existing org's UUID is `Org not found`.
         */
        org: string;
        /**
         * An endpoint id of the org; anything else (another org's endpoint included) is `Endpoint not found`.
         */
        endpointId: string;
    };
    query?: never;
    url: '/internal/v1/orgs/{org}/endpoints/{endpointId}/rotate-secret';
};
export type RotateEndpointSecretErrors = {
    /**
     * `Invalid JSON body`
     */
    400: Error;
    /**
     * `Unauthorized`: the internal token is missing or wrong.
     */
    401: Error;
    /**
     * `Lead not found`, `Org not found`, `Token not found`, `Handoff not found`, `Delivery not found`, `Webhook not configured` or `Not found`.
     */
    404: Error;
    /**
     * `Request timeout`: the body had not fully arrived 10 s after the request's head. The connection is closed.
     */
    408: Error;
    /**
     * `Request body too large` (over 64 KiB).
     */
    413: Error;
    /**
     * `Content-Type must be application/json`
     */
    415: Error;
    /**
     * A one-line message naming the invalid field (docs/api.md lists the messages).
     */
    422: Error;
    /**
     * `Internal server error` (the cause is logged with the request id, never returned).
     */
    500: Error;
    /**
     * `Service unavailable`: PostgreSQL (or, for `/readyz`, RabbitMQ) cannot be reached.
     */
    503: Error;
};
export type RotateEndpointSecretError = RotateEndpointSecretErrors[keyof RotateEndpointSecretErrors];
export type RotateEndpointSecretResponses = {
    /**
     * The new secret (shown once).
     */
    200: {
        signing_secret: SigningSecret;
        standard_webhooks_secret: StandardWebhooksSecret;
        previous_secret_expires_at: Timestamp | null;
    };
};
export type RotateEndpointSecretResponse = RotateEndpointSecretResponses[keyof RotateEndpointSecretResponses];
export type ProbeEndpointData = {
    body?: never;
    path: {
        /**
         * An org id; anything that is not an existing org's UUID is `Org not found`.
         */
        org: string;
        /**
         * An endpoint id of the org; anything else (another org's endpoint included) is `Endpoint not found`.
         */
        endpointId: string;
    };
    query?: never;
    url: '/internal/v1/orgs/{org}/endpoints/{endpointId}/probe';
};
export type ProbeEndpointErrors = {
    /**
     * `Unauthorized`: the internal token is missing or wrong.
     */
    401: Error;
    /**
     * `Lead not found`, `Org not found`, `Token not found`, `Handoff not found`, `Delivery not found`, `Webhook not configured` or `Not found`.
     */
    404: Error;
    /**
     * `Internal server error` (the cause is logged with the request id, never returned).
     */
    500: Error;
    /**
     * `Service unavailable`: PostgreSQL (or, for `/readyz`, RabbitMQ) cannot be reached.
     */
    503: Error;
};
export type ProbeEndpointError = ProbeEndpointErrors[keyof ProbeEndpointErrors];
export type ProbeEndpointResponses = {
    /**
     * `probing` is false when the endpoint is not failing (nothing to probe).
     */
    202: {
        probing: boolean;
    };
};
export type ProbeEndpointResponse = ProbeEndpointResponses[keyof ProbeEndpointResponses];
export type TestEndpointFilterData = {
    body: {
        /**
         * An event's envelope, as delivered or read from the feed.
         */
        event: {
            [key: string]: unknown;
        };
    };
    path: {
        /**
         * An org id; anything that is not an existing org's UUID is `Org not found`.
         */
        org: string;
        /**
         * An endpoint id of the org; anything else (another org's endpoint included) is `Endpoint not found`.
         */
        endpointId: string;
    };
    query?: never;
    url: '/internal/v1/orgs/{org}/endpoints/{endpointId}/filter-test';
};
export type TestEndpointFilterErrors = {
    /**
     * `Invalid JSON body`
     */
    400: Error;
    /**
     * `Unauthorized`: the internal token is missing or wrong.
     */
    401: Error;
    /**
     * `Lead not found`, `Org not found`, `Token not found`, `Handoff not found`, `Delivery not found`, `Webhook not configured` or `Not found`.
     */
    404: Error;
    /**
     * `Request timeout`: the body had not fully arrived 10 s after the request's head. The connection is closed.
     */
    408: Error;
    /**
     * `Request body too large` (over 64 KiB).
     */
    413: Error;
    /**
     * `Content-Type must be application/json`
     */
    415: Error;
    /**
     * A one-line message naming the invalid field (docs/api.md lists the messages).
     */
    422: Error;
    /**
     * `Internal server error` (the cause is logged with the request id, never returned).
     */
    500: Error;
    /**
     * `Service unavailable`: PostgreSQL (or, for `/readyz`, RabbitMQ) cannot be reached.
     */
    503: Error;
};
export type TestEndpointFilterError = TestEndpointFilterErrors[keyof TestEndpointFilterErrors];
export type TestEndpointFilterResponses = {
    /**
     * The answer.
     */
    200: {
        matches: boolean;
    };
};
export type TestEndpointFilterResponse = TestEndpointFilterResponses[keyof TestEndpointFilterResponses];
export type InboundContactData = {
    body: InboundContact;
    path: {
        /**
         * An org id; anything that is not an existing org's UUID is `Org not found`.
         */
        org: string;
    };
    query?: never;
    url: '/internal/v1/orgs/{org}/inbound';
};
export type InboundContactErrors = {
    /**
     * `Invalid JSON body`
     */
    400: Error;
    /**
     * `Unauthorized`: the internal token is missing or wrong.
     */
    401: Error;
    /**
     * `Lead not found`, `Org not found`, `Token not found`, `Handoff not found`, `Delivery not found`, `Webhook not configured` or `Not found`.
     */
    404: Error;
    /**
     * `Request timeout`: the body had not fully arrived 10 s after the request's head. The connection is closed.
     */
    408: Error;
    /**
     * `Request body too large` (over 64 KiB).
     */
    413: Error;
    /**
     * `Content-Type must be application/json`
     */
    415: Error;
    /**
     * A one-line message naming the invalid field (docs/api.md lists the messages).
     */
    422: Error;
    /**
     * `Internal server error` (the cause is logged with the request id, never returned).
     */
    500: Error;
    /**
     * `Service unavailable`: PostgreSQL (or, for `/readyz`, RabbitMQ) cannot be reached.
     */
    503: Error;
};
export type InboundContactError = InboundContactErrors[keyof InboundContactErrors];
export type InboundContactResponses = {
    /**
     * The lead.
     */
    200: LeadResponse;
    /**
     * The lead.
     */
    201: LeadResponse;
};
export type InboundContactResponse = InboundContactResponses[keyof InboundContactResponses];
export type InternalEraseLeadData = {
    body?: never;
    path: {
        /**
         * An org id; anything that is not an existing org's UUID is `Org not found`.
         */
        org: string;
        id: string;
    };
    query?: never;
    url: '/internal/v1/orgs/{org}/leads/{id}';
};
export type InternalEraseLeadErrors = {
    /**
     * `Unauthorized`: the internal token is missing or wrong.
     */
    401: Error;
    /**
     * `Lead not found`, `Org not found`, `Token not found`, `Handoff not found`, `Delivery not found`, `Webhook not configured` or `Not found`.
     */
    404: Error;
    /**
     * `Internal server error` (the cause is logged with the request id, never returned).
     */
    500: Error;
    /**
     * `Service unavailable`: PostgreSQL (or, for `/readyz`, RabbitMQ) cannot be reached.
     */
    503: Error;
};
export type InternalEraseLeadError = InternalEraseLeadErrors[keyof InternalEraseLeadErrors];
export type InternalEraseLeadResponses = {
    /**
     * Erased. No body.
     */
    204: void;
};
export type InternalEraseLeadResponse = InternalEraseLeadResponses[keyof InternalEraseLeadResponses];
export type InternalPatchLeadData = {
    body: InternalPatch;
    path: {
        /**
         * An org id; anything that is not an existing org's UUID is `Org not found`.
         */
        org: string;
        id: string;
    };
    query?: never;
    url: '/internal/v1/orgs/{org}/leads/{id}';
};
export type InternalPatchLeadErrors = {
    /**
     * `Invalid JSON body`
     */
    400: Error;
    /**
     * `Unauthorized`: the internal token is missing or wrong.
     */
    401: Error;
    /**
     * `Lead not found`, `Org not found`, `Token not found`, `Handoff not found`, `Delivery not found`, `Webhook not configured` or `Not found`.
     */
    404: Error;
    /**
     * `Request timeout`: the body had not fully arrived 10 s after the request's head. The connection is closed.
     */
    408: Error;
    /**
     * A state conflict, e.g. `Handoff already open` or `Delivery is still in progress`.
     */
    409: Error;
    /**
     * `Request body too large` (over 64 KiB).
     */
    413: Error;
    /**
     * `Content-Type must be application/json`
     */
    415: Error;
    /**
     * A one-line message naming the invalid field (docs/api.md lists the messages).
     */
    422: Error;
    /**
     * `Internal server error` (the cause is logged with the request id, never returned).
     */
    500: Error;
    /**
     * `Service unavailable`: PostgreSQL (or, for `/readyz`, RabbitMQ) cannot be reached.
     */
    503: Error;
};
export type InternalPatchLeadError = InternalPatchLeadErrors[keyof InternalPatchLeadErrors];
export type InternalPatchLeadResponses = {
    /**
     * The lead.
     */
    200: LeadResponse;
};
export type InternalPatchLeadResponse = InternalPatchLeadResponses[keyof InternalPatchLeadResponses];
export type CreateHandoffData = {
    body?: {
        reason?: string | null;
    };
    path: {
        /**
         * An org id; anything that is not an existing org's UUID is `Org not found`.
         */
        org: string;
        id: string;
    };
    query?: never;
    url: '/internal/v1/orgs/{org}/leads/{id}/handoffs';
};
export type CreateHandoffErrors = {
    /**
     * `Invalid JSON body`
     */
    400: Error;
    /**
     * `Unauthorized`: the internal token is missing or wrong.
     */
    401: Error;
    /**
     * `Lead not found`, `Org not found`, `Token not found`, `Handoff not found`, `Delivery not found`, `Webhook not configured` or `Not found`.
     */
    404: Error;
    /**
     * `Request timeout`: the body had not fully arrived 10 s after the request's head. The connection is closed.
     */
    408: Error;
    /**
     * A state conflict, e.g. `Handoff already open` or `Delivery is still in progress`.
     */
    409: Error;
    /**
     * `Request body too large` (over 64 KiB).
     */
    413: Error;
    /**
     * `Content-Type must be application/json`
     */
    415: Error;
    /**
     * A one-line message naming the invalid field (docs/api.md lists the messages).
     */
    422: Error;
    /**
     * `Internal server error` (the cause is logged with the request id, never returned).
     */
    500: Error;
    /**
     * `Service unavailable`: PostgreSQL (or, for `/readyz`, RabbitMQ) cannot be reached.
     */
    503: Error;
};
export type CreateHandoffError = CreateHandoffErrors[keyof CreateHandoffErrors];
export type CreateHandoffResponses = {
    /**
     * The handoff.
     */
    201: {
        handoff: Handoff;
    };
};
export type CreateHandoffResponse = CreateHandoffResponses[keyof CreateHandoffResponses];
export type AcceptHandoffData = {
    body: {
        operator: string;
    };
    path: {
        /**
         * An org id; anything that is not an existing org's UUID is `Org not found`.
         */
        org: string;
        id: string;
        hid: string;
    };
    query?: never;
    url: '/internal/v1/orgs/{org}/leads/{id}/handoffs/{hid}/accept';
};
export type AcceptHandoffErrors = {
    /**
     * `Invalid JSON body`
     */
    400: Error;
    /**
     * `Unauthorized`: the internal token is missing or wrong.
     */
    401: Error;
    /**
     * `Lead not found`, `Org not found`, `Token not found`, `Handoff not found`, `Delivery not found`, `Webhook not configured` or `Not found`.
     */
    404: Error;
    /**
     * `Request timeout`: the body had not fully arrived 10 s after the request's head. The connection is closed.
     */
    408: Error;
    /**
     * A state conflict, e.g. `Handoff already open` or `Delivery is still in progress`.
     */
    409: Error;
    /**
     * `Request body too large` (over 64 KiB).
     */
    413: Error;
    /**
     * `Content-Type must be application/json`
     */
    415: Error;
    /**
     * A one-line message naming the invalid field (docs/api.md lists the messages).
     */
    422: Error;
    /**
     * `Internal server error` (the cause is logged with the request id, never returned).
     */
    500: Error;
    /**
     * `Service unavailable`: PostgreSQL (or, for `/readyz`, RabbitMQ) cannot be reached.
     */
    503: Error;
};
export type AcceptHandoffError = AcceptHandoffErrors[keyof AcceptHandoffErrors];
export type AcceptHandoffResponses = {
    /**
     * The handoff.
     */
    200: {
        handoff: Handoff;
    };
};
export type AcceptHandoffResponse = AcceptHandoffResponses[keyof AcceptHandoffResponses];
export type ReleaseHandoffData = {
    body?: never;
    path: {
        /**
         * An org id; anything that is not an existing org's UUID is `Org not found`.
         */
        org: string;
        id: string;
        hid: string;
    };
    query?: never;
    url: '/internal/v1/orgs/{org}/leads/{id}/handoffs/{hid}/release';
};
export type ReleaseHandoffErrors = {
    /**
     * `Unauthorized`: the internal token is missing or wrong.
     */
    401: Error;
    /**
     * `Lead not found`, `Org not found`, `Token not found`, `Handoff not found`, `Delivery not found`, `Webhook not configured` or `Not found`.
     */
    404: Error;
    /**
     * A state conflict, e.g. `Handoff already open` or `Delivery is still in progress`.
     */
    409: Error;
    /**
     * `Internal server error` (the cause is logged with the request id, never returned).
     */
    500: Error;
    /**
     * `Service unavailable`: PostgreSQL (or, for `/readyz`, RabbitMQ) cannot be reached.
     */
    503: Error;
};
export type ReleaseHandoffError = ReleaseHandoffErrors[keyof ReleaseHandoffErrors];
export type ReleaseHandoffResponses = {
    /**
     * The handoff.
     */
    200: {
        handoff: Handoff;
    };
};
export type ReleaseHandoffResponse = ReleaseHandoffResponses[keyof ReleaseHandoffResponses];
export type ListDeliveriesData = {
    body?: never;
    path: {
        /**
         * An org id; anything that is not an existing org's UUID is `Org not found`.
         */
        org: string;
    };
    query?: {
        status?: DeliveryStatus;
        event_type?: EventType;
        lead_id?: string;
        /**
         * Whose deliveries; absent, the org's primary (oldest) endpoint's.
         */
        endpoint_id?: string;
        /**
         * Created at or after (inclusive).
         */
        since?: string;
        /**
         * Created before (exclusive).
         */
        until?: string;
        /**
         * `next_cursor` of the previous page.
         */
        cursor?: string;
        limit?: number;
    };
    url: '/internal/v1/orgs/{org}/deliveries';
};
export type ListDeliveriesErrors = {
    /**
     * `Unauthorized`: the internal token is missing or wrong.
     */
    401: Error;
    /**
     * `Lead not found`, `Org not found`, `Token not found`, `Handoff not found`, `Delivery not found`, `Webhook not configured` or `Not found`.
     */
    404: Error;
    /**
     * A one-line message naming the invalid field (docs/api.md lists the messages).
     */
    422: Error;
    /**
     * `Internal server error` (the cause is logged with the request id, never returned).
     */
    500: Error;
    /**
     * `Service unavailable`: PostgreSQL (or, for `/readyz`, RabbitMQ) cannot be reached.
     */
    503: Error;
};
export type ListDeliveriesError = ListDeliveriesErrors[keyof ListDeliveriesErrors];
export type ListDeliveriesResponses = {
    /**
     * Deliveries.
     */
    200: {
        deliveries: Array<Delivery>;
        next_cursor: string | null;
    };
};
export type ListDeliveriesResponse = ListDeliveriesResponses[keyof ListDeliveriesResponses];
export type CreateConsoleSessionData = {
    body?: never;
    path: {
        /**
         * An org id; anything that is not an existing org's UUID is `Org not found`.
         */
        org: string;
    };
    query?: never;
    url: '/internal/v1/orgs/{org}/console-sessions';
};
export type CreateConsoleSessionErrors = {
    /**
     * `Unauthorized`: the internal token is missing or wrong.
     */
    401: Error;
    /**
     * `Lead not found`, `Org not found`, `Token not found`, `Handoff not found`, `Delivery not found`, `Webhook not configured` or `Not found`.
     */
    404: Error;
    /**
     * `Internal server error` (the cause is logged with the request id, never returned).
     */
    500: Error;
    /**
     * `Service unavailable`: PostgreSQL (or, for `/readyz`, RabbitMQ) cannot be reached.
     */
    503: Error;
};
export type CreateConsoleSessionError = CreateConsoleSessionErrors[keyof CreateConsoleSessionErrors];
export type CreateConsoleSessionResponses = {
    /**
     * Minted.
     */
    201: {
        url: string;
        expires_at: Timestamp;
    };
};
export type CreateConsoleSessionResponse = CreateConsoleSessionResponses[keyof CreateConsoleSessionResponses];
export type ReplayDeliveriesData = {
    body?: {
        status?: Array<'dead' | 'failed' | 'skipped'>;
        /**
         * Created at or after.
         */
        since?: string;
        /**
         * Created before.
         */
        until?: string;
        event_types?: Array<EventType>;
        lead_id?: string;
        dry_run?: boolean;
    };
    path: {
        /**
         * An org id; anything that is not an existing org's UUID is `Org not found`.
         */
        org: string;
    };
    query?: never;
    url: '/internal/v1/orgs/{org}/deliveries/replay';
};
export type ReplayDeliveriesErrors = {
    /**
     * `Invalid JSON body`
     */
    400: Error;
    /**
     * `Unauthorized`: the internal token is missing or wrong.
     */
    401: Error;
    /**
     * `Lead not found`, `Org not found`, `Token not found`, `Handoff not found`, `Delivery not found`, `Webhook not configured` or `Not found`.
     */
    404: Error;
    /**
     * `Request body too large` (over 64 KiB).
     */
    413: Error;
    /**
     * `Content-Type must be application/json`
     */
    415: Error;
    /**
     * A one-line message naming the invalid field (docs/api.md lists the messages).
     */
    422: Error;
    /**
     * `Internal server error` (the cause is logged with the request id, never returned).
     */
    500: Error;
    /**
     * `Service unavailable`: PostgreSQL (or, for `/readyz`, RabbitMQ) cannot be reached.
     */
    503: Error;
};
export type ReplayDeliveriesError = ReplayDeliveriesErrors[keyof ReplayDeliveriesErrors];
export type ReplayDeliveriesResponses = {
    /**
     * Counted (and, unless a dry run, queued).
     */
    202: {
        matched: number;
        replayed: number;
        /**
         * Present when some matched deliveries were left as they were: a count by reason. `Event expired` counts those whose event is past retention (a single replay of one answers 409).
         */
        not_replayed?: {
            [key: string]: number;
        };
    };
};
export type ReplayDeliveriesResponse = ReplayDeliveriesResponses[keyof ReplayDeliveriesResponses];
export type GetDeliveryData = {
    body?: never;
    path: {
        /**
         * An org id; anything that is not an existing org's UUID is `Org not found`.
         */
        org: string;
        id: string;
    };
    query?: never;
    url: '/internal/v1/orgs/{org}/deliveries/{id}';
};
export type GetDeliveryErrors = {
    /**
     * `Unauthorized`: the internal token is missing or wrong.
     */
    401: Error;
    /**
     * `Lead not found`, `Org not found`, `Token not found`, `Handoff not found`, `Delivery not found`, `Webhook not configured` or `Not found`.
     */
    404: Error;
    /**
     * `Internal server error` (the cause is logged with the request id, never returned).
     */
    500: Error;
    /**
     * `Service unavailable`: PostgreSQL (or, for `/readyz`, RabbitMQ) cannot be reached.
     */
    503: Error;
};
export type GetDeliveryError = GetDeliveryErrors[keyof GetDeliveryErrors];
export type GetDeliveryResponses = {
    /**
     * One delivery with its attempt log.
     */
    200: {
        delivery: DeliveryDetail;
    };
};
export type GetDeliveryResponse = GetDeliveryResponses[keyof GetDeliveryResponses];
export type ReplayDeliveryData = {
    body?: never;
    path: {
        /**
         * An org id; anything that is not an existing org's UUID is `Org not found`.
         */
        org: string;
        id: string;
    };
    query?: never;
    url: '/internal/v1/orgs/{org}/deliveries/{id}/replay';
};
export type ReplayDeliveryErrors = {
    /**
     * `Unauthorized`: the internal token is missing or wrong.
     */
    401: Error;
    /**
     * `Lead not found`, `Org not found`, `Token not found`, `Handoff not found`, `Delivery not found`, `Webhook not configured` or `Not found`.
     */
    404: Error;
    /**
     * A state conflict, e.g. `Handoff already open` or `Delivery is still in progress`.
     */
    409: Error;
    /**
     * `Internal server error` (the cause is logged with the request id, never returned).
     */
    500: Error;
    /**
     * `Service unavailable`: PostgreSQL (or, for `/readyz`, RabbitMQ) cannot be reached.
     */
    503: Error;
};
export type ReplayDeliveryError = ReplayDeliveryErrors[keyof ReplayDeliveryErrors];
export type ReplayDeliveryResponses = {
    /**
     * Queued again.
     */
    202: {
        status: 'pending';
    };
};
export type ReplayDeliveryResponse = ReplayDeliveryResponses[keyof ReplayDeliveryResponses];
export type HealthzData = {
    body?: never;
    path?: never;
    query?: never;
    url: '/healthz';
};
export type HealthzResponses = {
    /**
     * Up.
     */
    200: {
        status: 'ok';
    };
};
export type HealthzResponse = HealthzResponses[keyof HealthzResponses];
export type ReadyzData = {
    body?: never;
    path?: never;
    query?: never;
    url: '/readyz';
};
export type ReadyzErrors = {
    /**
     * `Service unavailable`: PostgreSQL (or, for `/readyz`, RabbitMQ) cannot be reached.
     */
    503: Error;
};
export type ReadyzError = ReadyzErrors[keyof ReadyzErrors];
export type ReadyzResponses = {
    /**
     * Ready.
     */
    200: {
        status: 'ready';
    };
};
export type ReadyzResponse = ReadyzResponses[keyof ReadyzResponses];
export type LeadCreatedEventWebhookPayload = EventLeadCreated;
export type LeadCreatedEventWebhookRequest = {
    body: LeadCreatedEventWebhookPayload;
    key: 'lead.created';
    path?: never;
    query?: never;
};
export type LeadUpdatedEventWebhookPayload = EventLeadUpdated;
export type LeadUpdatedEventWebhookRequest = {
    body: LeadUpdatedEventWebhookPayload;
    key: 'lead.updated';
    path?: never;
    query?: never;
};
export type LeadStageChangedEventWebhookPayload = EventLeadStageChanged;
export type LeadStageChangedEventWebhookRequest = {
    body: LeadStageChangedEventWebhookPayload;
    key: 'lead.stage_changed';
    path?: never;
    query?: never;
};
export type LeadQualifiedEventWebhookPayload = EventLeadQualified;
export type LeadQualifiedEventWebhookRequest = {
    body: LeadQualifiedEventWebhookPayload;
    key: 'lead.qualified';
    path?: never;
    query?: never;
};
export type HandoffCreatedEventWebhookPayload = EventHandoffCreated;
export type HandoffCreatedEventWebhookRequest = {
    body: HandoffCreatedEventWebhookPayload;
    key: 'handoff.created';
    path?: never;
    query?: never;
};
export type HandoffAcceptedEventWebhookPayload = EventHandoffAccepted;
export type HandoffAcceptedEventWebhookRequest = {
    body: HandoffAcceptedEventWebhookPayload;
    key: 'handoff.accepted';
    path?: never;
    query?: never;
};
export type HandoffReleasedEventWebhookPayload = EventHandoffReleased;
export type HandoffReleasedEventWebhookRequest = {
    body: HandoffReleasedEventWebhookPayload;
    key: 'handoff.released';
    path?: never;
    query?: never;
};
export type LeadErasedEventWebhookPayload = EventLeadErased;
export type LeadErasedEventWebhookRequest = {
    body: LeadErasedEventWebhookPayload;
    key: 'lead.erased';
    path?: never;
    query?: never;
};
