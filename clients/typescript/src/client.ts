/**
 * The client of the agent memory service: one method per API operation, on `fetch` alone.
 *
 *     const memory = new MemoryClient({ baseUrl: "http://127.0.0.1:8000", apiKey: KEY });
 *     await memory.appendEvents("s-1", {
 *       user_id: "u-1",
 *       events: [{ role: "user", content: "Hi" }],
 *     });
 *     const recalled = await memory.recall({ user_id: "u-1", session_id: "s-1", query: "hi" });
 *     console.log(recalled.injection_text);
 *
 * Requests and answers are the JSON itself, typed from the service's OpenAPI schema.
 */
import { errorFor, MemoryServiceError, RequestTimeout, TransportError } from "./errors.js";
import type {
  Answer,
  ApiPath,
  AppendRequest,
  AppendResponse,
  Card,
  CardImportResponse,
  CardIn,
  CardPage,
  CardsQuery,
  CardUpdate,
  CardUpdateResponse,
  CompressRequest,
  CompressResponse,
  Deletion,
  EventOut,
  LtmSearchRequest,
  LtmSearchResponse,
  MemoryUpdate,
  MemoryUpdateResponse,
  MethodOf,
  PathParams,
  ProfilePatch,
  ProfilePatchResponse,
  ProfileResponse,
  PromotionsQuery,
  PromotionsResponse,
  Proposal,
  ProposalsResponse,
  QueryOf,
  RecallRequest,
  RecallResponse,
  ReplayQuery,
  ReplayResponse,
  RequestBody,
  StmItem,
  StmItemWithProvenance,
  StmPage,
  StmQuery,
  UserExport,
  UserMemories,
  UserMemoriesQuery,
  VerifyResponse,
} from "./types.js";

export const DEFAULT_BASE_URL = "http://127.0.0.1:8000";
export const DEFAULT_TIMEOUT_MS = 30_000;
export const ENV_BASE_URL = "MEMORY_API_URL";
export const ENV_API_KEY = "MEMORY_API_KEY";
export const USER_AGENT = "agent-memory-client-ts/0.1";

/**
 * Retry 429 and 503 answers (the service wrote nothing) up to `retries` times.
 *
 * Each wait is the answer's `Retry-After` (seconds or an HTTP date, at most `maxRetryAfterMs`)
 * or else exponential backoff with full jitter: a random time up to `backoffMs · 2^attempt`,
 * at most `maxBackoffMs`. A call that got no answer (a timeout, a reset) is repeated only when
 * that is safe: reads, dry runs, deletion requests and appends.
 */
export interface RetryPolicy {
  retries: number;
  backoffMs: number;
  maxBackoffMs: number;
  maxRetryAfterMs: number;
  statuses: readonly number[];
}

export const DEFAULT_RETRY: RetryPolicy = Object.freeze({
  retries: 3,
  backoffMs: 500,
  maxBackoffMs: 30_000,
  maxRetryAfterMs: 120_000,
  statuses: Object.freeze([429, 503]),
});
export const NO_RETRIES: RetryPolicy = Object.freeze({ ...DEFAULT_RETRY, retries: 0 });

export interface MemoryClientOptions {
  /** Defaults to $MEMORY_API_URL (where `process.env` exists), else http://127.0.0.1:8000. */
  baseUrl?: string;
  /** Sent as `Authorization: Bearer <key>`; defaults to $MEMORY_API_KEY. */
  apiKey?: string;
  /** Per attempt, until the whole answer is read. */
  timeoutMs?: number;
  retry?: Partial<RetryPolicy>;
  headers?: Record<string, string>;
  /** The id given to an appended event that has none. */
  eventId?: () => string;
  /** Another fetch (a wrapper, a mock); the global one by default. */
  fetch?: typeof fetch;
  sleep?: (ms: number) => Promise<void>;
}

/** A client event id, so a retried append is answered with the original ids. */
export function newEventId(): string {
  const uuid = globalThis.crypto?.randomUUID?.();
  if (uuid) return `evt-${uuid.replaceAll("-", "")}`;
  // Node 18 has no global crypto; the id only has to be unique, not secret.
  let hex = "";
  for (let i = 0; i < 32; i++) hex += Math.floor(Math.random() * 16).toString(16);
  return `evt-${hex}`;
}

/** The `Retry-After` header as seconds to wait (RFC 9110: delay-seconds or HTTP-date). */
export function retryAfterSeconds(value: string | null | undefined): number | undefined {
  if (!value) return undefined;
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text);
  const when = Date.parse(text);
  if (Number.isNaN(when)) return undefined;
  return Math.max((when - Date.now()) / 1000, 0);
}

function environment(name: string): string | undefined {
  const process = (globalThis as { process?: { env?: Record<string, string | undefined> } })
    .process;
  return process?.env?.[name] || undefined;
}

type QueryValue = string | number | boolean | null | undefined | readonly (string | number)[];

/** How a call goes: what to send, and whether a call without an answer may be repeated. */
interface CallOptions {
  path?: Record<string, string>;
  query?: Record<string, QueryValue> | undefined;
  body?: unknown;
  repeatable?: boolean;
}

function expand(template: string, params: Record<string, string> = {}): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new TypeError(`No value for {${name}} in ${template}`);
    return encodeURIComponent(value);
  });
}

function queryString(query: Record<string, QueryValue> = {}): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined || value === null) continue;
    for (const one of Array.isArray(value) ? value : [value]) search.append(key, String(one));
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

function reasonBody(reason: string | undefined): { reason: string } | undefined {
  return reason ? { reason } : undefined;
}

export class MemoryClient {
  readonly baseUrl: string;
  readonly timeoutMs: number;
  readonly retry: RetryPolicy;
  readonly #headers: Record<string, string>;
  readonly #eventId: () => string;
  readonly #fetch: typeof fetch;
  readonly #sleep: (ms: number) => Promise<void>;

  constructor(options: MemoryClientOptions = {}) {
    const key = options.apiKey ?? environment(ENV_API_KEY) ?? "";
    if (!key) throw new TypeError(`No API key: pass apiKey or set ${ENV_API_KEY}.`);
    const base = options.baseUrl || environment(ENV_BASE_URL) || DEFAULT_BASE_URL;
    this.baseUrl = base.replace(/\/+$/, "");
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.retry = { ...DEFAULT_RETRY, ...options.retry };
    this.#headers = {
      Authorization: `Bearer ${key}`,
      Accept: "application/json",
      "User-Agent": USER_AGENT,
      ...options.headers,
    };
    this.#eventId = options.eventId ?? newEventId;
    const fetchImpl = options.fetch ?? globalThis.fetch;
    if (typeof fetchImpl !== "function") throw new TypeError("No fetch: pass one in options.");
    this.#fetch = (input, init) => fetchImpl(input, init); // unbound, as browsers want it
    this.#sleep =
      options.sleep ?? ((ms: number) => new Promise((done) => setTimeout(done, ms)));
  }

  /** Any operation by its path: typed by the generated schema, retried like the others. */
  async request<P extends ApiPath, M extends MethodOf<P>>(
    method: M,
    path: P,
    options: {
      path?: PathParams<P, M>;
      query?: QueryOf<P, M>;
      body?: RequestBody<P, M>;
      repeatable?: boolean;
    } = {},
  ): Promise<Answer<P, M>> {
    return this.#send(method, path, options);
  }

  /** As `request`, with any body: for a DELETE's `{"reason"}`, which the schema leaves out. */
  async #send<P extends ApiPath, M extends MethodOf<P>>(
    method: M,
    path: P,
    options: {
      path?: PathParams<P, M>;
      query?: QueryOf<P, M>;
      body?: unknown;
      repeatable?: boolean;
    },
  ): Promise<Answer<P, M>> {
    return (await this.#call(method, path, options as CallOptions)) as Answer<P, M>;
  }

  #delay(attempt: number, retryAfter: number | undefined): number {
    const policy = this.retry;
    if (retryAfter !== undefined) {
      return Math.min(Math.max(retryAfter * 1000, 0), policy.maxRetryAfterMs);
    }
    return Math.random() * Math.min(policy.maxBackoffMs, policy.backoffMs * 2 ** attempt);
  }

  async #call(method: string, template: string, options: CallOptions): Promise<unknown> {
    const url = this.baseUrl + expand(template, options.path) + queryString(options.query);
    const headers: Record<string, string> = { ...this.#headers };
    let body: string | undefined;
    if (options.body !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(options.body);
    }
    const init = { method: method.toUpperCase(), headers, body };
    for (let attempt = 0; ; attempt++) {
      let outcome: { status: number; retryAfter: string | null; text: string };
      try {
        outcome = await this.#attempt(url, init);
      } catch (error) {
        if (!(error instanceof TransportError)) throw error;
        if (!options.repeatable || attempt >= this.retry.retries) throw error;
        await this.#sleep(this.#delay(attempt, undefined));
        continue;
      }
      const retryAfter = retryAfterSeconds(outcome.retryAfter);
      if (this.retry.statuses.includes(outcome.status) && attempt < this.retry.retries) {
        await this.#sleep(this.#delay(attempt, retryAfter));
        continue;
      }
      return this.#answer(outcome.status, outcome.text, retryAfter);
    }
  }

  /** One round trip, the whole body read within the timeout; no answer is a TransportError. */
  async #attempt(
    url: string,
    init: RequestInit,
  ): Promise<{ status: number; retryAfter: string | null; text: string }> {
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, this.timeoutMs);
    try {
      const response = await this.#fetch(url, { ...init, signal: controller.signal });
      const text = await response.text();
      return { status: response.status, retryAfter: response.headers.get("Retry-After"), text };
    } catch (error) {
      if (timedOut) {
        throw new RequestTimeout(`No answer from the service within ${this.timeoutMs} ms`, {
          cause: error,
        });
      }
      const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      throw new TransportError(`No answer from the service: ${reason}`, { cause: error });
    } finally {
      clearTimeout(timer);
    }
  }

  #answer(status: number, text: string, retryAfter: number | undefined): unknown {
    let body: unknown = text;
    if (text) {
      try {
        body = JSON.parse(text);
      } catch (error) {
        if (status < 400) {
          throw new MemoryServiceError("The service's answer is not JSON", {
            status,
            body: text,
            cause: error,
          });
        }
      }
    }
    if (status >= 400) throw errorFor(status, body, retryAfter);
    return status === 204 || !text ? undefined : body;
  }

  // --- transcripts (Layer 0) -----------------------------------------------------------------

  /** Append a batch as one segment (all or nothing). Events without an `id` get one, so a
   * retry (after a timeout, a 429 or a 503) is answered with the original ids. */
  appendEvents(sessionId: string, request: AppendRequest): Promise<AppendResponse> {
    const events = request.events.map((event) => ({ ...event, id: event.id || this.#eventId() }));
    return this.request("post", "/v1/sessions/{session_id}/events", {
      path: { session_id: sessionId },
      body: { ...request, events },
      repeatable: true, // every event carries an id: a repeat writes nothing
    });
  }

  /** One page of the session's events in order (`after` a seq, at most `limit`). */
  replayEvents(sessionId: string, query: ReplayQuery = {}): Promise<ReplayResponse> {
    return this.request("get", "/v1/sessions/{session_id}/events", {
      path: { session_id: sessionId },
      query,
      repeatable: true,
    });
  }

  /** Every event of the session, in order, page by page. */
  async *iterEvents(sessionId: string, { pageSize = 500 } = {}): AsyncGenerator<EventOut> {
    let after = 0;
    for (;;) {
      const page = await this.replayEvents(sessionId, { after, limit: pageSize });
      yield* page.events;
      if (!page.has_more) return;
      after = page.next_after;
    }
  }

  verifySession(sessionId: string): Promise<VerifyResponse> {
    return this.request("get", "/v1/sessions/{session_id}/verify", {
      path: { session_id: sessionId },
      repeatable: true,
    });
  }

  // --- profiles (Layer 1) --------------------------------------------------------------------

  getProfile(userId: string): Promise<ProfileResponse> {
    return this.request("get", "/v1/users/{user_id}/profile", {
      path: { user_id: userId },
      repeatable: true,
    });
  }

  /** Change profile fields, preferences, roles and facts in one step (admin key). */
  updateProfile(userId: string, patch: ProfilePatch): Promise<ProfilePatchResponse> {
    return this.request("patch", "/v1/users/{user_id}/profile", {
      path: { user_id: userId },
      body: patch,
    });
  }

  // --- short-term memory (Layer 2) -----------------------------------------------------------

  /** Propose facts; the tenant's write policy decides each (`dryRun`: write nothing). */
  proposeMemories(
    proposals: Proposal[],
    { dryRun = false }: { dryRun?: boolean } = {},
  ): Promise<ProposalsResponse> {
    return this.request("post", "/v1/memories/proposals", {
      body: { proposals },
      query: dryRun ? { dry_run: true } : {},
      repeatable: dryRun,
    });
  }

  listStm(query: StmQuery): Promise<StmPage> {
    return this.request("get", "/v1/memories/stm", { query, repeatable: true });
  }

  getMemory(itemId: string): Promise<StmItemWithProvenance> {
    return this.request("get", "/v1/memories/{item_id}", {
      path: { item_id: itemId },
      repeatable: true,
    });
  }

  /** Change some fields of a live item in place, guarded as a new write is: see `outcome`
   * (an edit held for review or verification changed nothing yet). */
  updateMemory(itemId: string, changes: MemoryUpdate): Promise<MemoryUpdateResponse> {
    return this.request("patch", "/v1/memories/{item_id}", {
      path: { item_id: itemId },
      body: changes,
      repeatable: changes.expected_version !== undefined, // a repeat is then a 409
    });
  }

  async deleteMemory(itemId: string): Promise<void> {
    await this.request("delete", "/v1/memories/{item_id}", { path: { item_id: itemId } });
  }

  // --- long-term memory (Layer 3) ------------------------------------------------------------

  /** Bulk import (admin key; all or nothing); a known `id` updates its card. */
  importCards(cards: CardIn[]): Promise<CardImportResponse> {
    return this.request("post", "/v1/ltm/cards:import", {
      body: { cards },
      repeatable: cards.length > 0 && cards.every((card) => card.id), // updates by id
    });
  }

  /** Cards newest first: one user's, the shared ones, or all; page on with `cursor`. */
  listCards(query: CardsQuery = {}): Promise<CardPage> {
    return this.request("get", "/v1/ltm/cards", { query, repeatable: true });
  }

  /** Change a card in place as a new version (admin key). */
  updateCard(memoryId: string, changes: CardUpdate): Promise<CardUpdateResponse> {
    return this.request("patch", "/v1/ltm/cards/{memory_id}", {
      path: { memory_id: memoryId },
      body: changes,
      repeatable: changes.expected_version !== undefined,
    });
  }

  getCard(memoryId: string): Promise<Card> {
    return this.request("get", "/v1/ltm/cards/{memory_id}", {
      path: { memory_id: memoryId },
      repeatable: true,
    });
  }

  /** Ask for the card's erasure (admin key): a deletion request a reviewer approves. */
  deleteCard(memoryId: string, { reason }: { reason?: string } = {}): Promise<Deletion> {
    return this.#send("delete", "/v1/ltm/cards/{memory_id}", {
      path: { memory_id: memoryId },
      body: reasonBody(reason),
      repeatable: true, // an open request for the same card is answered as is
    });
  }

  searchLtm(request: LtmSearchRequest): Promise<LtmSearchResponse> {
    return this.request("post", "/v1/ltm/search", { body: request, repeatable: true });
  }

  // --- recall and compression ----------------------------------------------------------------

  /** What to inject before the next model turn: blocks, items and `injection_text`. */
  recall(request: RecallRequest): Promise<RecallResponse> {
    // Not repeated without an answer: each recall is recorded in the session's transcript.
    return this.request("post", "/v1/recall", { body: request });
  }

  /** The session's context for the next turn within `budget_tokens` (writes nothing). */
  compressSession(sessionId: string, request: CompressRequest): Promise<CompressResponse> {
    return this.request("post", "/v1/sessions/{session_id}/compress", {
      path: { session_id: sessionId },
      body: request,
      repeatable: true,
    });
  }

  // --- review: deletions, promotions, export -------------------------------------------------

  /** Ask to erase an end user from every layer (admin key); a reviewer approves it. */
  forgetUser(userId: string, { reason }: { reason?: string } = {}): Promise<Deletion> {
    return this.request("post", "/v1/users/{user_id}/forget", {
      path: { user_id: userId },
      body: reasonBody(reason),
      repeatable: true,
    });
  }

  /** Ask to erase a stable fact (`fact_<n>`) or preference (`pref_<n>`) (admin key). */
  deleteFact(factId: string, { reason }: { reason?: string } = {}): Promise<Deletion> {
    return this.#send("delete", "/v1/facts/{fact_id}", {
      path: { fact_id: factId },
      body: reasonBody(reason),
      repeatable: true,
    });
  }

  getDeletion(requestId: string): Promise<Deletion> {
    return this.request("get", "/v1/deletions/{request_id}", {
      path: { request_id: requestId },
      repeatable: true,
    });
  }

  listPromotions(query: PromotionsQuery = {}): Promise<PromotionsResponse> {
    return this.request("get", "/v1/promotions", { query, repeatable: true });
  }

  /** Everything held about one end user, as one document (admin key). */
  exportUser(userId: string): Promise<UserExport> {
    return this.request("get", "/v1/users/{user_id}/export", {
      path: { user_id: userId },
      repeatable: true,
    });
  }

  /** The user's profile, live short-term items and own cards, each part paged. */
  getUserMemories(userId: string, query: UserMemoriesQuery = {}): Promise<UserMemories> {
    return this.request("get", "/v1/users/{user_id}/memories", {
      path: { user_id: userId },
      query,
      repeatable: true,
    });
  }

  /** Every live item, then every own card, of the user, page by page. */
  async *iterUserMemories(
    userId: string,
    { pageSize = 100 } = {},
  ): AsyncGenerator<StmItem | Card> {
    const first = await this.getUserMemories(userId, { limit: pageSize });
    yield* first.items;
    let itemsBefore = first.next_items_before;
    while (itemsBefore !== null) {
      const page = await this.getUserMemories(userId, {
        limit: pageSize,
        items_before: Number(itemsBefore),
      });
      yield* page.items;
      itemsBefore = page.next_items_before;
    }
    yield* first.cards;
    let cardsCursor = first.next_cards_cursor;
    while (cardsCursor !== null) {
      const page = await this.getUserMemories(userId, {
        limit: pageSize,
        cards_cursor: Number(cardsCursor),
      });
      yield* page.cards;
      cardsCursor = page.next_cards_cursor;
    }
  }
}
