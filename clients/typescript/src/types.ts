/**
 * Names for the requests and answers of the API, read off the generated `paths` by path and
 * method (never by operation id or component name, which the service may rename).
 */
import type { paths } from "./schema.js";

export type { components, paths } from "./schema.js";

/** Every path of the API, e.g. `"/v1/sessions/{session_id}/events"`. */
export type ApiPath = keyof paths;
export type HttpMethod = "get" | "post" | "patch" | "put" | "delete";
/** The methods a path has. */
export type MethodOf<P extends ApiPath> = {
  [M in HttpMethod]: paths[P][M] extends { responses: unknown } ? M : never;
}[HttpMethod];
/** One operation of the generated types: a path and one of its methods. */
export type OperationOf<P extends ApiPath, M extends MethodOf<P>> = Extract<
  paths[P][M],
  { responses: unknown }
>;

type Json<T> = T extends { content: { "application/json": infer Body } } ? Body : never;
type SuccessStatus = 200 | 201 | 202 | 203 | 204 | 205 | 206;

/** The JSON body an operation takes (`never` when it takes none). */
export type RequestBody<P extends ApiPath, M extends MethodOf<P>> =
  OperationOf<P, M> extends { requestBody?: infer Body } ? Json<NonNullable<Body>> : never;
/** An operation's query parameters. */
export type QueryOf<P extends ApiPath, M extends MethodOf<P>> =
  OperationOf<P, M> extends { parameters: { query?: infer Query } } ? NonNullable<Query> : never;
/** An operation's path parameters, e.g. `{ session_id: string }`. */
export type PathParams<P extends ApiPath, M extends MethodOf<P>> =
  OperationOf<P, M> extends { parameters: { path?: infer Params } } ? NonNullable<Params> : never;
/** What a successful call answers: the union of its 2xx bodies, `void` for a 204. */
export type Answer<P extends ApiPath, M extends MethodOf<P>> = {
  [S in keyof OperationOf<P, M>["responses"]]: S extends SuccessStatus
    ? S extends 204
      ? void
      : Json<OperationOf<P, M>["responses"][S]>
    : never;
}[keyof OperationOf<P, M>["responses"]];

// --- transcripts (Layer 0) -------------------------------------------------------------------
export type AppendRequest = RequestBody<"/v1/sessions/{session_id}/events", "post">;
/** One event to append; one without an `id` gets a client id before it is sent. */
export type EventIn = AppendRequest["events"][number];
export type AppendResponse = Answer<"/v1/sessions/{session_id}/events", "post">;
export type ReplayQuery = QueryOf<"/v1/sessions/{session_id}/events", "get">;
export type ReplayResponse = Answer<"/v1/sessions/{session_id}/events", "get">;
export type EventOut = ReplayResponse["events"][number];
export type VerifyResponse = Answer<"/v1/sessions/{session_id}/verify", "get">;

// --- profiles (Layer 1) ----------------------------------------------------------------------
export type ProfileResponse = Answer<"/v1/users/{user_id}/profile", "get">;
export type ProfilePatch = RequestBody<"/v1/users/{user_id}/profile", "patch">;
export type ProfilePatchResponse = Answer<"/v1/users/{user_id}/profile", "patch">;

// --- short-term memory (Layer 2) -------------------------------------------------------------
export type ProposalsRequest = RequestBody<"/v1/memories/proposals", "post">;
export type Proposal = ProposalsRequest["proposals"][number];
export type ProposalsResponse = Answer<"/v1/memories/proposals", "post">;
export type StmQuery = QueryOf<"/v1/memories/stm", "get">;
export type StmPage = Answer<"/v1/memories/stm", "get">;
export type StmItem = StmPage["items"][number];
export type StmItemWithProvenance = Answer<"/v1/memories/{item_id}", "get">;
export type MemoryUpdate = RequestBody<"/v1/memories/{item_id}", "patch">;
export type MemoryUpdateResponse = Answer<"/v1/memories/{item_id}", "patch">;

// --- long-term memory (Layer 3) --------------------------------------------------------------
export type CardImportRequest = RequestBody<"/v1/ltm/cards:import", "post">;
export type CardIn = CardImportRequest["cards"][number];
export type CardImportResponse = Answer<"/v1/ltm/cards:import", "post">;
export type Card = Answer<"/v1/ltm/cards/{memory_id}", "get">;
export type CardsQuery = QueryOf<"/v1/ltm/cards", "get">;
export type CardPage = Answer<"/v1/ltm/cards", "get">;
export type CardUpdate = RequestBody<"/v1/ltm/cards/{memory_id}", "patch">;
export type CardUpdateResponse = Answer<"/v1/ltm/cards/{memory_id}", "patch">;
export type LtmSearchRequest = RequestBody<"/v1/ltm/search", "post">;
export type LtmSearchResponse = Answer<"/v1/ltm/search", "post">;

// --- recall and compression ------------------------------------------------------------------
export type RecallRequest = RequestBody<"/v1/recall", "post">;
export type RecallResponse = Answer<"/v1/recall", "post">;
export type CompressRequest = RequestBody<"/v1/sessions/{session_id}/compress", "post">;
export type CompressResponse = Answer<"/v1/sessions/{session_id}/compress", "post">;

// --- review: deletions, promotions, export ---------------------------------------------------
/** The optional body of a deletion request: why it is asked for. */
export type DeletionRequest = RequestBody<"/v1/users/{user_id}/forget", "post">;
export type Deletion = Answer<"/v1/deletions/{request_id}", "get">;
export type PromotionsQuery = QueryOf<"/v1/promotions", "get">;
export type PromotionsResponse = Answer<"/v1/promotions", "get">;
export type UserExport = Answer<"/v1/users/{user_id}/export", "get">;
export type UserMemoriesQuery = QueryOf<"/v1/users/{user_id}/memories", "get">;
export type UserMemories = Answer<"/v1/users/{user_id}/memories", "get">;

// --- errors ----------------------------------------------------------------------------------
/** Every 4xx and 5xx answer: `{"error": {"code", "message", "fields"}}`. */
export type ErrorBody = Json<
  OperationOf<"/v1/sessions/{session_id}/events", "post">["responses"][400]
>;
/** The stable, machine-readable error codes the service answers with. */
export type ErrorCode = ErrorBody["error"]["code"];
