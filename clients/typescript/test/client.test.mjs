// The client on its own, with a fetch that answers from a script: requests, retries,
// timeouts and errors. Runs on the compiled dist/ (`npm test`).
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  Conflict,
  InvalidRequest,
  MemoryClient,
  MemoryServiceError,
  NotFound,
  RequestTimeout,
  ServerError,
  StoreUnavailable,
  Throttled,
  TransportError,
  retryAfterSeconds,
} from "../dist/index.js";

const json = (status, body, headers = {}) =>
  new Response(body === undefined ? null : JSON.stringify(body), {
    status,
    headers: { "Content-Type": "application/json", ...headers },
  });

const failure = (status, code, message = "", headers = {}) =>
  json(status, { error: { code, message, fields: {} } }, headers);

/** A fetch answering each call with the next of `answers` (a Response, an Error to throw, or
 * a function of the call), and the calls it saw. */
function scripted(...answers) {
  const calls = [];
  const fetch = async (url, init) => {
    calls.push({ url, ...init, json: init.body === undefined ? undefined : JSON.parse(init.body) });
    const next = answers.shift();
    if (next instanceof Error) throw next;
    return typeof next === "function" ? next(url, init) : next;
  };
  return { fetch, calls };
}

const waits = [];
const client = (fetch, options = {}) =>
  new MemoryClient({
    baseUrl: "http://memory.test/",
    apiKey: "k-1",
    fetch,
    sleep: async (ms) => void waits.push(ms),
    eventId: () => "evt-fixed",
    ...options,
  });

test("a call sends the key, the path with quoted segments and the JSON body", async () => {
  const { fetch, calls } = scripted(json(201, { created: true }));
  await client(fetch).appendEvents("s 1/x", {
    user_id: "u-1",
    events: [{ role: "user", content: "Hi" }, { id: "evt-mine", role: "assistant", content: "Yo" }],
  });
  const [call] = calls;
  assert.equal(call.url, "http://memory.test/v1/sessions/s%201%2Fx/events");
  assert.equal(call.method, "POST");
  assert.equal(call.headers.Authorization, "Bearer k-1");
  assert.equal(call.headers["Content-Type"], "application/json");
  assert.deepEqual(
    call.json.events.map((event) => event.id),
    ["evt-fixed", "evt-mine"],
  );
});

test("queries drop empty values; a dry run is a query flag; a 204 answers undefined", async () => {
  const noContent = new Response(null, { status: 204 });
  const { fetch, calls } = scripted(json(200, {}), json(200, {}), noContent);
  const memory = client(fetch);
  await memory.listStm({ user_id: "u 1", limit: 5, type: undefined });
  await memory.proposeMemories([], { dryRun: true });
  assert.equal(await memory.deleteMemory("stm-1"), undefined);
  assert.equal(calls[0].url, "http://memory.test/v1/memories/stm?user_id=u+1&limit=5");
  assert.equal(calls[1].url, "http://memory.test/v1/memories/proposals?dry_run=true");
  assert.equal(calls[2].method, "DELETE");
  assert.equal(calls[2].body, undefined);
});

test("a deletion's reason goes in the DELETE body", async () => {
  const { fetch, calls } = scripted(json(202, { status: "pending" }));
  await client(fetch).deleteCard("card-1", { reason: "outdated" });
  assert.deepEqual(calls[0].json, { reason: "outdated" });
});

test("error answers are exceptions by code, with status, message and fields", async () => {
  const { fetch } = scripted(
    json(400, { error: { code: "invalid", message: "Bad.", fields: { "events.0.role": ["no"] } } }),
    failure(409, "duplicate_event_id", "Reused."),
    failure(404, "brand_new_code", "Odd."),
    new Response("<h1>oops</h1>", { status: 502 }),
  );
  const memory = client(fetch, { retry: { retries: 0 } });
  await assert.rejects(memory.getCard("a"), (error) => {
    assert.ok(error instanceof InvalidRequest && error instanceof MemoryServiceError);
    assert.equal(error.status, 400);
    assert.equal(error.code, "invalid");
    assert.equal(error.message, "Bad.");
    assert.deepEqual(error.fields, { "events.0.role": ["no"] });
    return true;
  });
  await assert.rejects(
    memory.getCard("b"),
    (e) => e instanceof Conflict && e.code === "duplicate_event_id",
  );
  // a code this version does not know: the class of its status
  await assert.rejects(
    memory.getCard("c"),
    (e) => e instanceof NotFound && e.code === "brand_new_code",
  );
  await assert.rejects(
    memory.getCard("d"),
    (e) => e instanceof ServerError && e.body === "<h1>oops</h1>",
  );
});

test("429 and 503 are retried, waiting what Retry-After says", async () => {
  waits.length = 0;
  const { fetch, calls } = scripted(
    failure(429, "throttled", "Slow.", { "Retry-After": "7" }),
    failure(503, "store_unavailable"),
    json(200, { ok: true }),
  );
  assert.deepEqual(await client(fetch).verifySession("s-1"), { ok: true });
  assert.equal(calls.length, 3);
  assert.equal(waits[0], 7000);
  assert.ok(waits[1] >= 0 && waits[1] <= 1000); // backoff 500 ms · 2^1, full jitter
});

test("when the retries run out the last error is raised", async () => {
  const busy = () => failure(503, "store_unavailable", "Down.");
  const { fetch, calls } = scripted(busy, busy, busy);
  const patient = client(fetch, { retry: { retries: 2 } });
  await assert.rejects(patient.getProfile("u-1"), StoreUnavailable);
  assert.equal(calls.length, 3);
  const limited = scripted(failure(429, "throttled", "", { "Retry-After": "3" }));
  const impatient = client(limited.fetch, { retry: { retries: 0 } });
  await assert.rejects(impatient.getProfile("u"), (e) => {
    assert.ok(e instanceof Throttled);
    assert.equal(e.retryAfterSeconds, 3);
    return true;
  });
});

test("no answer: reads are repeated, a recall is not", async () => {
  const { fetch, calls } = scripted(new TypeError("fetch failed"), json(200, { ok: true }));
  await client(fetch).verifySession("s-1");
  assert.equal(calls.length, 2);
  const once = scripted(new TypeError("fetch failed"), json(200, {}));
  await assert.rejects(
    client(once.fetch).recall({ user_id: "u", session_id: "s", query: "q" }),
    (e) => e instanceof TransportError && e.status === undefined && e.code === "transport_error",
  );
  assert.equal(once.calls.length, 1);
});

test("a call that takes longer than timeoutMs is aborted as RequestTimeout", async () => {
  const hang = (_url, init) =>
    new Promise((_, fail) => init.signal.addEventListener("abort", () => fail(init.signal.reason)));
  const { fetch } = scripted(hang);
  const hasty = client(fetch, { timeoutMs: 20, retry: { retries: 0 } });
  await assert.rejects(hasty.getCard("x"), (e) => {
    assert.ok(e instanceof RequestTimeout && e instanceof TransportError);
    assert.equal(e.code, "timeout");
    return true;
  });
});

test("an append whose answer was lost is sent again with the same event ids", async () => {
  const { fetch, calls } = scripted(new TypeError("socket hang up"), json(200, { created: false }));
  const memory = new MemoryClient({ baseUrl: "http://memory.test", apiKey: "k", fetch });
  await memory.appendEvents("s", { user_id: "u", events: [{ role: "user", content: "Hi" }] });
  assert.equal(calls.length, 2);
  assert.match(calls[0].json.events[0].id, /^evt-[0-9a-f]{32}$/);
  assert.equal(calls[1].json.events[0].id, calls[0].json.events[0].id);
});

test("Retry-After is read as seconds or as an HTTP date", () => {
  assert.equal(retryAfterSeconds("12"), 12);
  assert.equal(retryAfterSeconds(null), undefined);
  assert.equal(retryAfterSeconds("soon"), undefined);
  const inTenSeconds = new Date(Date.now() + 10_000).toUTCString();
  const seconds = retryAfterSeconds(inTenSeconds);
  assert.ok(seconds > 8 && seconds <= 10, String(seconds));
});

test("a client without a key is refused at once", () => {
  const saved = process.env.MEMORY_API_KEY;
  delete process.env.MEMORY_API_KEY;
  try {
    assert.throws(() => new MemoryClient({ fetch: async () => json(200, {}) }), /No API key/);
  } finally {
    if (saved !== undefined) process.env.MEMORY_API_KEY = saved;
  }
});
