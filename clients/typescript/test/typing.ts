/**
 * Compile-time checks (run by `tsc --noEmit`, never executed): the named types are the
 * schema's shapes, not `any` or `never`, and the client refuses what the API refuses.
 */
import type {
  Answer,
  ApiPath,
  AppendResponse,
  Card,
  Deletion,
  ErrorCode,
  EventIn,
  MethodOf,
  Proposal,
  RecallRequest,
  RecallResponse,
  StmPage,
} from "../src/index.js";
import { MemoryClient, NotFound } from "../src/index.js";

type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2
  ? true
  : false;
type IsAny<T> = 0 extends 1 & T ? true : false;
function expectType<T extends true>(): T | undefined {
  return undefined;
}

expectType<Equals<IsAny<RecallResponse>, false>>();
expectType<Equals<[RecallResponse] extends [never] ? true : false, false>>();
expectType<Equals<AppendResponse["created"], boolean>>();
expectType<Equals<StmPage["items"][number]["id"], string>>();
expectType<Equals<Card["memory_id"], string>>();
expectType<Equals<Deletion["status"] extends string ? true : false, true>>();
expectType<Equals<Answer<"/v1/memories/{item_id}", "delete">, void>>();
expectType<Equals<"not_found" extends ErrorCode ? true : false, true>>();

const event: EventIn = { role: "user", content: "Hi" }; // the id is optional
// @ts-expect-error a role the API does not know
const robot: EventIn = { role: "robot", content: "Hi" };
// @ts-expect-error the query is required
const noQuery: RecallRequest = { user_id: "u-1", session_id: "s-1" };
const proposal: Proposal = {
  user_id: "u-1",
  session_id: "s-1",
  memory_type: "fact",
  summary: "The user deploys with Terraform.",
};

export async function usage(memory: MemoryClient): Promise<string> {
  await memory.appendEvents("s-1", { user_id: "u-1", events: [event] });
  await memory.proposeMemories([proposal], { dryRun: true });
  // @ts-expect-error a path the API does not have
  await memory.request("get", "/v1/nowhere");
  // @ts-expect-error a method the path does not have
  await memory.request("put", "/v1/recall");
  try {
    return (await memory.getCard("card-1")).summary;
  } catch (error) {
    if (error instanceof NotFound) return error.code;
    throw error;
  }
}

export const unused = [robot, noQuery];

/** Every operation of the schema, as `"<method> <path>"`. */
type SchemaOperation = { [P in ApiPath]: `${MethodOf<P>} ${P}` }[ApiPath];

// The client has a method for every operation of the schema and for no other: an operation
// added to or dropped from the API fails this check until the client follows.
export const OPERATIONS = {
  "post /v1/sessions/{session_id}/events": "appendEvents",
  "get /v1/sessions/{session_id}/events": "replayEvents",
  "get /v1/sessions/{session_id}/verify": "verifySession",
  "get /v1/users/{user_id}/profile": "getProfile",
  "patch /v1/users/{user_id}/profile": "updateProfile",
  "post /v1/memories/proposals": "proposeMemories",
  "get /v1/memories/stm": "listStm",
  "get /v1/memories/{item_id}": "getMemory",
  "patch /v1/memories/{item_id}": "updateMemory",
  "delete /v1/memories/{item_id}": "deleteMemory",
  "post /v1/ltm/cards:import": "importCards",
  "get /v1/ltm/cards": "listCards",
  "get /v1/ltm/cards/{memory_id}": "getCard",
  "patch /v1/ltm/cards/{memory_id}": "updateCard",
  "delete /v1/ltm/cards/{memory_id}": "deleteCard",
  "post /v1/ltm/search": "searchLtm",
  "post /v1/recall": "recall",
  "post /v1/sessions/{session_id}/compress": "compressSession",
  "post /v1/users/{user_id}/forget": "forgetUser",
  "delete /v1/facts/{fact_id}": "deleteFact",
  "get /v1/deletions/{request_id}": "getDeletion",
  "get /v1/promotions": "listPromotions",
  "get /v1/users/{user_id}/export": "exportUser",
  "get /v1/users/{user_id}/memories": "getUserMemories",
} as const satisfies Record<SchemaOperation, keyof MemoryClient>;
