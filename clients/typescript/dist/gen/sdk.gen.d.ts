import type { Client, ClientMeta, Options as Options2, RequestResult, TDataShape } from './client';
import type { AcceptHandoffData, AcceptHandoffErrors, AcceptHandoffResponses, CreateConsoleSessionData, CreateConsoleSessionErrors, CreateConsoleSessionResponses, CreateEndpointData, CreateEndpointErrors, CreateEndpointResponses, CreateHandoffData, CreateHandoffErrors, CreateHandoffResponses, CreateLeadData, CreateLeadErrors, CreateLeadResponses, CreateOrgData, CreateOrgErrors, CreateOrgResponses, CreateTokenData, CreateTokenErrors, CreateTokenResponses, DeleteEndpointData, DeleteEndpointErrors, DeleteEndpointResponses, EraseLeadData, EraseLeadErrors, EraseLeadResponses, GetDeliveryData, GetDeliveryErrors, GetDeliveryResponses, GetEndpointData, GetEndpointErrors, GetEndpointResponses, GetLeadData, GetLeadErrors, GetLeadResponses, GetWebhookData, GetWebhookErrors, GetWebhookResponses, HealthzData, HealthzResponses, InboundContactData, InboundContactErrors, InboundContactResponses, InternalEraseLeadData, InternalEraseLeadErrors, InternalEraseLeadResponses, InternalPatchLeadData, InternalPatchLeadErrors, InternalPatchLeadResponses, ListDeliveriesData, ListDeliveriesErrors, ListDeliveriesResponses, ListEndpointsData, ListEndpointsErrors, ListEndpointsResponses, ListEventsData, ListEventsErrors, ListEventsResponses, ListLeadsData, ListLeadsErrors, ListLeadsResponses, PatchLeadData, PatchLeadErrors, PatchLeadResponses, ProbeEndpointData, ProbeEndpointErrors, ProbeEndpointResponses, PutEndpointData, PutEndpointErrors, PutEndpointResponses, PutWebhookData, PutWebhookErrors, PutWebhookResponses, ReadyzData, ReadyzErrors, ReadyzResponses, ReleaseHandoffData, ReleaseHandoffErrors, ReleaseHandoffResponses, ReplayDeliveriesData, ReplayDeliveriesErrors, ReplayDeliveriesResponses, ReplayDeliveryData, ReplayDeliveryErrors, ReplayDeliveryResponses, RevokeTokenData, RevokeTokenErrors, RevokeTokenResponses, RotateEndpointSecretData, RotateEndpointSecretErrors, RotateEndpointSecretResponses, RotateSecretData, RotateSecretErrors, RotateSecretResponses, SendTestEventData, SendTestEventErrors, SendTestEventResponses, TestEndpointFilterData, TestEndpointFilterErrors, TestEndpointFilterResponses } from './types.gen';
export type Options<TData extends TDataShape = TDataShape, ThrowOnError extends boolean = boolean, TResponse = unknown> = Options2<TData, ThrowOnError, TResponse> & {
    /**
     * You can provide a client instance returned by `createClient()` instead of
     * individual options. This might be also useful if you want to implement a
     * custom client.
     */
    client?: Client;
    /**
     * You can pass arbitrary values through the `meta` object. This can be
     * used to access values that aren't defined as part of the SDK function.
     */
    meta?: keyof ClientMeta extends never ? Record<string, unknown> : ClientMeta;
};
/**
 * The org's leads by `updated_at` then `id`, ascending, keyset-paged (catching up).
 *
 * For a full resync. Rows that change while you page move to the end of the order, so a
 * walk sees every lead at least as of when it started; to follow changes in commit order,
 * use `/api/v1/events`.
 *
 */
export declare const listLeads: <ThrowOnError extends boolean = false>(options?: Options<ListLeadsData, ThrowOnError>) => RequestResult<ListLeadsResponses, ListLeadsErrors, ThrowOnError>;
/**
 * Create a lead (one per phone within the org; emits no event).
 */
export declare const createLead: <ThrowOnError extends boolean = false>(options: Options<CreateLeadData, ThrowOnError>) => RequestResult<CreateLeadResponses, CreateLeadErrors, ThrowOnError>;
/**
 * Erase the contact (the right to be forgotten).
 *
 * In one transaction: the lead and its handoffs are deleted; every stored event about it
 * keeps only its `id`, `type`, `version`, `occurred_at`, `org_id` and `data.lead.id`, with
 * `"erased": true`; its deliveries that had not succeeded end `skipped` and are never sent;
 * the receivers' answers and request headers leave its attempt logs; kept Idempotency-Key
 * answers holding it are removed; and `lead.erased` is emitted. The phone is free
 * afterwards. An unknown, another org's or an already erased lead is 404.
 *
 */
export declare const eraseLead: <ThrowOnError extends boolean = false>(options: Options<EraseLeadData, ThrowOnError>) => RequestResult<EraseLeadResponses, EraseLeadErrors, ThrowOnError>;
/**
 * Read a lead of the caller's org.
 *
 * The answer's `ETag` is the lead's revision, quoted (`"7"`). With `If-None-Match` naming it
 * (or `*`), the answer is 304 with no body: the copy the client holds is current.
 *
 */
export declare const getLead: <ThrowOnError extends boolean = false>(options: Options<GetLeadData, ThrowOnError>) => RequestResult<GetLeadResponses, GetLeadErrors, ThrowOnError>;
/**
 * Write back from the CRM (`external_ref`, `ai_paused`) or close the lead.
 *
 * `status: closed` emits `lead.stage_changed` only when the stage changes. `external_ref` and
 * `ai_paused` emit nothing, so a CRM's write-back never echoes back to it. Every change
 * raises the lead's `revision` by one; a request that changes nothing leaves it. With
 * `If-Match`, the change is made only if the lead is at one of the named revisions (`*`:
 * any); otherwise 412 and nothing is written.
 *
 */
export declare const patchLead: <ThrowOnError extends boolean = false>(options: Options<PatchLeadData, ThrowOnError>) => RequestResult<PatchLeadResponses, PatchLeadErrors, ThrowOnError>;
/**
 * Every event of the org, as delivered, in commit order (catching up).
 *
 * Start without `after`, follow `next_cursor` until a page is empty, keep the last
 * `next_cursor` and resume from it later: every event arrives exactly once, in commit order,
 * whatever the webhook configuration. Each envelope is byte for byte the body a receiver
 * was sent (same `id`: dedupe against webhooks by it). Test events are not in the feed.
 * Events are kept `QUALIFIER_EVENT_RETENTION_DAYS` (default 30). A page holds at most
 * `QUALIFIER_MAX_PAGE_BYTES` (default 1 MiB) of JSON: it may end before `limit` events, at
 * a whole event, and `next_cursor` continues from there. Cursors are opaque (sealed; they
 * reveal nothing of other orgs' volume); cursors issued before cursors were sealed keep working.
 *
 */
export declare const listEvents: <ThrowOnError extends boolean = false>(options?: Options<ListEventsData, ThrowOnError>) => RequestResult<ListEventsResponses, ListEventsErrors, ThrowOnError>;
export declare const createOrg: <ThrowOnError extends boolean = false>(options: Options<CreateOrgData, ThrowOnError>) => RequestResult<CreateOrgResponses, CreateOrgErrors, ThrowOnError>;
/**
 * A new org token; its secret is shown once.
 *
 * At most 100 unrevoked tokens per org: the 101st is 422 `Token limit reached` (revoke one to make room).
 */
export declare const createToken: <ThrowOnError extends boolean = false>(options: Options<CreateTokenData, ThrowOnError>) => RequestResult<CreateTokenResponses, CreateTokenErrors, ThrowOnError>;
/**
 * Revoke a token; it is refused from the next request on.
 */
export declare const revokeToken: <ThrowOnError extends boolean = false>(options: Options<RevokeTokenData, ThrowOnError>) => RequestResult<RevokeTokenResponses, RevokeTokenErrors, ThrowOnError>;
export declare const getWebhook: <ThrowOnError extends boolean = false>(options: Options<GetWebhookData, ThrowOnError>) => RequestResult<GetWebhookResponses, GetWebhookErrors, ThrowOnError>;
/**
 * Create or replace the org's webhook; the signing secret is returned on creation only.
 */
export declare const putWebhook: <ThrowOnError extends boolean = false>(options: Options<PutWebhookData, ThrowOnError>) => RequestResult<PutWebhookResponses, PutWebhookErrors, ThrowOnError>;
/**
 * A new signing secret, used at once (also for deliveries already queued).
 *
 * During `grace_seconds` (default 86400, at most 604800; 0 for none) the secret being retired also signs: `webhook-signature` carries the new secret's entry first and the previous one's second, so receivers can deploy the new secret before the old one stops. `X-Qualifier-Signature` always carries only the current secret's signature.
 */
export declare const rotateSecret: <ThrowOnError extends boolean = false>(options: Options<RotateSecretData, ThrowOnError>) => RequestResult<RotateSecretResponses, RotateSecretErrors, ThrowOnError>;
/**
 * Send a signed example event through the normal pipeline.
 *
 * Same headers, signatures, retries and delivery log as any delivery, plus `X-Qualifier-Test: true`. The example lead's id is the nil UUID; handoff examples carry an example `handoff`. Sent even to a type the webhook is not subscribed to. At most 10 a minute per org, API and console together (429 `Rate limit exceeded` with `Retry-After`). While the endpoint is failing, a test event is sent at once and its answer counts as a probe (a 2xx makes the endpoint healthy).
 */
export declare const sendTestEvent: <ThrowOnError extends boolean = false>(options: Options<SendTestEventData, ThrowOnError>) => RequestResult<SendTestEventResponses, SendTestEventErrors, ThrowOnError>;
/**
 * The org's endpoints, oldest (the primary) first, with their health; never a secret.
 */
export declare const listEndpoints: <ThrowOnError extends boolean = false>(options: Options<ListEndpointsData, ThrowOnError>) => RequestResult<ListEndpointsResponses, ListEndpointsErrors, ThrowOnError>;
/**
 * One more endpoint for the org; its signing secret is returned this once.
 *
 * Each event goes to every enabled endpoint subscribed to its type, signed with that endpoint's secret, under a delivery id of its own, with its own retries, health, throttle and order. At most `QUALIFIER_MAX_ENDPOINTS_PER_ORG` (10) per org: beyond it, 422 `Endpoint limit reached`.
 */
export declare const createEndpoint: <ThrowOnError extends boolean = false>(options: Options<CreateEndpointData, ThrowOnError>) => RequestResult<CreateEndpointResponses, CreateEndpointErrors, ThrowOnError>;
/**
 * Delete the endpoint; its pending deliveries end `skipped` (`Endpoint deleted`) with no request made.
 */
export declare const deleteEndpoint: <ThrowOnError extends boolean = false>(options: Options<DeleteEndpointData, ThrowOnError>) => RequestResult<DeleteEndpointResponses, DeleteEndpointErrors, ThrowOnError>;
export declare const getEndpoint: <ThrowOnError extends boolean = false>(options: Options<GetEndpointData, ThrowOnError>) => RequestResult<GetEndpointResponses, GetEndpointErrors, ThrowOnError>;
/**
 * Replace the endpoint's settings (the fields of its creation); its secret stays.
 */
export declare const putEndpoint: <ThrowOnError extends boolean = false>(options: Options<PutEndpointData, ThrowOnError>) => RequestResult<PutEndpointResponses, PutEndpointErrors, ThrowOnError>;
/**
 * A new signing secret for this endpoint, as `…/webhook/rotate-secret` does for the primary.
 */
export declare const rotateEndpointSecret: <ThrowOnError extends boolean = false>(options: Options<RotateEndpointSecretData, ThrowOnError>) => RequestResult<RotateEndpointSecretResponses, RotateEndpointSecretErrors, ThrowOnError>;
/**
 * "Check now": a failing endpoint's next probe is due at once.
 */
export declare const probeEndpoint: <ThrowOnError extends boolean = false>(options: Options<ProbeEndpointData, ThrowOnError>) => RequestResult<ProbeEndpointResponses, ProbeEndpointErrors, ThrowOnError>;
/**
 * Whether the endpoint's saved filter matches an event's envelope.
 *
 * `true` for an endpoint without a filter. The same route is at `…/webhook/filter-test` for the org's primary endpoint.
 */
export declare const testEndpointFilter: <ThrowOnError extends boolean = false>(options: Options<TestEndpointFilterData, ThrowOnError>) => RequestResult<TestEndpointFilterResponses, TestEndpointFilterErrors, ThrowOnError>;
/**
 * A contact arrived on a channel; creates the lead (201) or updates the known one (200).
 */
export declare const inboundContact: <ThrowOnError extends boolean = false>(options: Options<InboundContactData, ThrowOnError>) => RequestResult<InboundContactResponses, InboundContactErrors, ThrowOnError>;
/**
 * Erase the contact, as `DELETE /api/v1/leads/{leadId}` does.
 */
export declare const internalEraseLead: <ThrowOnError extends boolean = false>(options: Options<InternalEraseLeadData, ThrowOnError>) => RequestResult<InternalEraseLeadResponses, InternalEraseLeadErrors, ThrowOnError>;
/**
 * The AI agent's and the product's changes to a lead (any stage transition).
 */
export declare const internalPatchLead: <ThrowOnError extends boolean = false>(options: Options<InternalPatchLeadData, ThrowOnError>) => RequestResult<InternalPatchLeadResponses, InternalPatchLeadErrors, ThrowOnError>;
/**
 * Ask for a human; 409 `Handoff already open` while one is open.
 */
export declare const createHandoff: <ThrowOnError extends boolean = false>(options: Options<CreateHandoffData, ThrowOnError>) => RequestResult<CreateHandoffResponses, CreateHandoffErrors, ThrowOnError>;
/**
 * An operator takes the conversation (only from `requested`).
 */
export declare const acceptHandoff: <ThrowOnError extends boolean = false>(options: Options<AcceptHandoffData, ThrowOnError>) => RequestResult<AcceptHandoffResponses, AcceptHandoffErrors, ThrowOnError>;
/**
 * The operator gives the conversation back (only from `accepted`).
 */
export declare const releaseHandoff: <ThrowOnError extends boolean = false>(options: Options<ReleaseHandoffData, ThrowOnError>) => RequestResult<ReleaseHandoffResponses, ReleaseHandoffErrors, ThrowOnError>;
/**
 * The org's webhook deliveries, newest first, filtered and keyset-paged.
 */
export declare const listDeliveries: <ThrowOnError extends boolean = false>(options: Options<ListDeliveriesData, ThrowOnError>) => RequestResult<ListDeliveriesResponses, ListDeliveriesErrors, ThrowOnError>;
/**
 * A one-time sign-in link to the settings console for this org (10 minutes, single use).
 *
 * The product embeds or links `url`; opening it sets an 8-hour session cookie scoped to the
 * org and redirects to `/console`. Links point at `QUALIFIER_CONSOLE_BASE_URL` (default:
 * the public listener). See docs/console.md.
 *
 */
export declare const createConsoleSession: <ThrowOnError extends boolean = false>(options: Options<CreateConsoleSessionData, ThrowOnError>) => RequestResult<CreateConsoleSessionResponses, CreateConsoleSessionErrors, ThrowOnError>;
/**
 * Every matching finished delivery gets 5 fresh attempts under its own id, paced.
 *
 * Replays of one org are sent at most `QUALIFIER_REPLAY_RATE_PER_SECOND` (default 50) per
 * second. A dry run counts and changes nothing. The body is optional (`{}`: every dead
 * delivery).
 *
 */
export declare const replayDeliveries: <ThrowOnError extends boolean = false>(options: Options<ReplayDeliveriesData, ThrowOnError>) => RequestResult<ReplayDeliveriesResponses, ReplayDeliveriesErrors, ThrowOnError>;
export declare const getDelivery: <ThrowOnError extends boolean = false>(options: Options<GetDeliveryData, ThrowOnError>) => RequestResult<GetDeliveryResponses, GetDeliveryErrors, ThrowOnError>;
/**
 * A finished delivery gets 5 fresh attempts under the same delivery id.
 */
export declare const replayDelivery: <ThrowOnError extends boolean = false>(options: Options<ReplayDeliveryData, ThrowOnError>) => RequestResult<ReplayDeliveryResponses, ReplayDeliveryErrors, ThrowOnError>;
/**
 * The process is up.
 */
export declare const healthz: <ThrowOnError extends boolean = false>(options?: Options<HealthzData, ThrowOnError>) => RequestResult<HealthzResponses, unknown, ThrowOnError>;
/**
 * 200 only when PostgreSQL and RabbitMQ answer.
 */
export declare const readyz: <ThrowOnError extends boolean = false>(options?: Options<ReadyzData, ThrowOnError>) => RequestResult<ReadyzResponses, ReadyzErrors, ThrowOnError>;
