// The client against a running service (the service's tests start one and run this file with
// MEMORY_API_URL, MEMORY_API_KEY (all scopes) and MEMORY_API_READ_KEY (read only) set; without
// them it is skipped). Runs on the compiled dist/.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  Conflict,
  InvalidRequest,
  MemoryClient,
  MemoryServiceError,
  NotFound,
  PermissionDenied,
  Unauthenticated,
} from "../dist/index.js";

const { MEMORY_API_URL: baseUrl, MEMORY_API_KEY: apiKey, MEMORY_API_READ_KEY: readKey } =
  process.env;
const skip = !baseUrl || !apiKey ? "no service: set MEMORY_API_URL and MEMORY_API_KEY" : false;
const USER = "u-ts";

const conversation = () => ({
  user_id: USER,
  events: [
    { role: "user", content: "Please remember that I deploy with Terraform." },
    { role: "assistant", content: "Noted: you deploy with Terraform." },
  ],
});

test("record, propose, read items and cards, recall, ask for deletions", { skip }, async () => {
  const memory = new MemoryClient({ baseUrl, apiKey });
  const session = "s-ts";

  const appended = await memory.appendEvents(session, conversation());
  assert.equal(appended.created, true);
  assert.equal(appended.event_count, 2);
  assert.ok(appended.events.every((event) => event.id.startsWith("evt-")));
  const again = await memory.appendEvents(session, {
    user_id: USER,
    events: appended.events.map((event, i) => ({ ...conversation().events[i], id: event.id })),
  });
  assert.equal(again.created, false); // the same client ids: nothing written twice

  const seqs = [];
  for await (const event of memory.iterEvents(session, { pageSize: 1 })) seqs.push(event.seq);
  assert.deepEqual(seqs, [1, 2]);
  assert.equal((await memory.verifySession(session)).ok, true);

  const profile = await memory.updateProfile(USER, {
    profile: { answer_style: "concise" },
    facts: [{ key: "project_metadata.default_env", value: "staging" }],
  });
  assert.match(profile.facts[0].id, /^fact_/);
  assert.equal((await memory.getProfile(USER)).profile.answer_style, "concise");

  const proposal = {
    user_id: USER,
    session_id: session,
    memory_type: "fact",
    summary: "The user deploys with Terraform.",
    remember: true,
    confidence: 0.9,
    importance: 0.8,
  };
  const dry = await memory.proposeMemories([proposal], { dryRun: true });
  assert.equal(dry.dry_run, true);
  assert.equal(dry.results[0].item_id, null);
  const proposed = await memory.proposeMemories([proposal]);
  const itemId = proposed.results[0].item_id;
  assert.ok(itemId, JSON.stringify(proposed));

  const page = await memory.listStm({ user_id: USER });
  assert.ok(page.items.some((item) => item.id === itemId));
  const item = await memory.getMemory(itemId);
  assert.equal(item.id, itemId);
  assert.equal(item.summary, "The user deploys with Terraform.");
  const changed = await memory.updateMemory(itemId, { tags: ["deploy"], expected_version: 1 });
  assert.equal(changed.outcome, "updated");
  assert.equal(changed.item.version, 2);
  await assert.rejects(memory.updateMemory(itemId, { tags: ["x"], expected_version: 1 }), Conflict);

  const imported = await memory.importCards([
    {
      id: "card-terraform",
      user_id: USER,
      memory_type: "procedure",
      title: "Deploying",
      summary: "Deploys go through Terraform plan, then apply after review.",
    },
  ]);
  const memoryId = imported.cards[0].memory_id;
  const card = await memory.getCard(memoryId);
  assert.equal(card.status, "active");
  assert.equal(card.summary, "Deploys go through Terraform plan, then apply after review.");
  const cards = await memory.listCards({ user_id: USER });
  assert.deepEqual(
    cards.cards.map((one) => one.memory_id),
    [memoryId],
  );
  const edited = await memory.updateCard(memoryId, { tags: ["terraform"] });
  assert.equal(edited.outcome, "updated");
  assert.equal(edited.card.version, 2);
  const everything = await memory.getUserMemories(USER, { limit: 10 });
  assert.equal(everything.profile.profile.answer_style, "concise");
  assert.ok(everything.items.some((one) => one.id === itemId));
  assert.deepEqual(
    everything.cards.map((one) => one.memory_id),
    [memoryId],
  );
  const walked = [];
  for await (const one of memory.iterUserMemories(USER, { pageSize: 1 })) walked.push(one);
  assert.equal(walked.length, everything.items.length + everything.cards.length);
  const found = await memory.searchLtm({
    query: "Terraform apply",
    mode: "lexical",
    user_id: USER,
  });
  assert.ok(found.hits.some((hit) => hit.memory_id === memoryId));

  const recalled = await memory.recall({
    user_id: USER,
    session_id: session,
    query: "How do I deploy?",
    layers: ["redis", "ltm"],
  });
  assert.match(recalled.injection_text, /Terraform/);
  const compressed = await memory.compressSession(session, { budget_tokens: 500, user_id: USER });
  assert.equal(compressed.within_budget, true);

  const deletion = await memory.deleteCard(memoryId, { reason: "outdated" });
  assert.equal(deletion.status, "pending");
  assert.equal(deletion.reason, "outdated");
  assert.equal((await memory.getDeletion(deletion.request_id)).request_id, deletion.request_id);
  assert.equal((await memory.getCard(memoryId)).status, "active"); // nothing removed yet
  const factDeletion = await memory.deleteFact(profile.facts[0].id);
  assert.equal(factDeletion.receipt, null);

  assert.ok(Array.isArray((await memory.listPromotions({ limit: 5 })).promotions));
  const exported = await memory.exportUser(USER);
  assert.ok(exported.short_term.some((one) => one.id === itemId));
  assert.equal(await memory.deleteMemory(itemId), undefined);
  await assert.rejects(memory.getMemory(itemId), NotFound);
  assert.equal((await memory.forgetUser(USER)).kind, "user");
});

test("errors are typed by the service's code and carry its fields", { skip }, async () => {
  const memory = new MemoryClient({ baseUrl, apiKey });
  const session = "s-ts-errors";
  const first = await memory.appendEvents(session, conversation());

  await assert.rejects(memory.getCard("card-none"), (error) => {
    assert.ok(error instanceof NotFound && error instanceof MemoryServiceError);
    assert.equal(error.status, 404);
    assert.equal(error.code, "not_found");
    assert.equal(typeof error.message, "string");
    assert.deepEqual(error.body.error.code, "not_found");
    return true;
  });
  await assert.rejects(
    memory.appendEvents(session, { user_id: USER, events: [{ role: "robot", content: "x" }] }),
    (error) => {
      assert.ok(error instanceof InvalidRequest);
      assert.equal(error.status, 400);
      assert.equal(error.code, "invalid");
      assert.ok("events.0.role" in error.fields, JSON.stringify(error.fields));
      assert.ok(error.fields["events.0.role"].every((problem) => typeof problem === "string"));
      return true;
    },
  );
  await assert.rejects(
    memory.appendEvents(session, {
      user_id: USER,
      events: [{ id: first.events[0].id, role: "user", content: "other" }],
    }),
    (error) => error instanceof Conflict && error.code === "duplicate_event_id",
  );
  if (readKey) {
    const reader = new MemoryClient({ baseUrl, apiKey: readKey });
    await assert.rejects(
      reader.importCards([{ memory_type: "knowledge", summary: "Nope." }]),
      (error) => error instanceof PermissionDenied && error.status === 403,
    );
  }
  const nobody = new MemoryClient({ baseUrl, apiKey: "not-a-key" });
  await assert.rejects(
    nobody.getProfile(USER),
    (error) => error instanceof Unauthenticated && error.code === "unauthenticated",
  );
});
