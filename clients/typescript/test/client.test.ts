// The client against a running `recall serve` (with API keys): typed errors, the inbox long-poll
// with an AbortSignal, the listen() iterator, contexts, search, facts, memories, calls and replay.
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import {
  AuthenticationError,
  ConflictError,
  InvalidInputError,
  NotFoundError,
  PermissionDeniedError,
  RecallError,
  type InboxItem,
} from "recall-memory";
import { AGENT_KEY, client, until, waitingChecks } from "./server.js";

const recall = client();

/** A world of its own for each test: agents agent-a and agent-b, human maria. */
async function freshWorld(id: string) {
  const world = await recall.createWorld(id);
  await world.addAgent("agent-a", { system_prompt: "You are A." });
  await world.addAgent("agent-b", { system_prompt: "You are B.", history_limit: 25 });
  await world.addHuman("maria");
  return world;
}

describe("errors", () => {
  test("invalid input is an InvalidInputError with recall's code, field and words", async () => {
    const error = await recall.createWorld("bad id!").catch((e: unknown) => e);
    assert.ok(error instanceof InvalidInputError && error instanceof RecallError);
    assert.equal(error.status, 422);
    assert.equal(error.code, "invalid_input");
    assert.equal(error.field, "id");
    assert.match(error.message, /'bad id!' is not a valid id: use up to 64 ASCII letters/);
    assert.equal(error.problems[0]?.field, "id");
  });

  test("an unknown world is a NotFoundError", async () => {
    const error = await recall.world("nowhere").info().catch((e: unknown) => e);
    assert.ok(error instanceof NotFoundError);
    assert.equal(error.code, "not_found");
    assert.match(error.message, /nowhere/);
  });

  test("a world that exists is a ConflictError, unless exist_ok", async () => {
    await freshWorld("twice");
    const error = await recall.createWorld("twice").catch((e: unknown) => e);
    assert.ok(error instanceof ConflictError);
    assert.equal(error.code, "conflict");
    assert.equal((await recall.createWorld("twice", { exist_ok: true })).id, "twice");
    const again = await recall.world("twice").addAgent("agent-a", { system_prompt: "other", exist_ok: true });
    assert.equal(again.system_prompt, "You are A.", "exist_ok answers the agent as it is");
  });

  test("a wrong API key is an AuthenticationError", async () => {
    const error = await client("not-a-key").worlds().catch((e: unknown) => e);
    assert.ok(error instanceof AuthenticationError);
    assert.equal(error.status, 401);
    assert.equal(error.code, "unauthorized");
  });

  test("an agent's key acting as another agent is a PermissionDeniedError", async () => {
    const world = await freshWorld("keys");
    const asAgentB = client(AGENT_KEY).world("keys");
    assert.deepEqual((await asAgentB.agent("agent-b").inbox()).new_mentions, []);
    const error = await asAgentB.agent("agent-a").inbox().catch((e: unknown) => e);
    assert.ok(error instanceof PermissionDeniedError);
    assert.equal(error.code, "forbidden");
    const posted = await asAgentB.post("agent-a", "posing").catch((e: unknown) => e);
    assert.ok(posted instanceof PermissionDeniedError);
    assert.deepEqual((await world.messages()).messages, [], "nothing was stored");
  });
});

describe("the inbox", () => {
  test("a long poll is woken by a post, with its context", async () => {
    const world = await freshWorld("woken");
    await world.post("maria", "hello all"); // public: agent-b would answer it too
    const agent = world.agent("agent-b");
    await agent.inbox({ mark_read: true }); // so the next check has nothing to answer, and waits
    const before = await waitingChecks();
    const waiting = agent.inbox({ wait: true, timeout: 60, include_context: true, mark_read: true });
    await until(async () => (await waitingChecks()) > before, "the check is asleep on the server");
    const posted = await world.post("maria", "@agent-b are you there?");
    const check = await waiting;
    assert.deepEqual(check.new_mentions.map((m) => m.id), [posted.id]);
    // The context is the conversation before the new messages, which come apart.
    assert.deepEqual(check.context.map((m) => m.content), ["hello all"]);
    assert.equal(check.context_metadata.delta, false);
    assert.ok(check.call_id?.startsWith("c_"));
  });

  test("aborting the signal cancels a waiting long poll", async () => {
    const world = await freshWorld("aborted");
    const before = await waitingChecks();
    const controller = new AbortController();
    const waiting = world.agent("agent-b").inbox({ wait: true, timeout: 120, signal: controller.signal });
    await until(async () => (await waitingChecks()) > before, "the check is asleep on the server");
    controller.abort();
    await assert.rejects(waiting, { name: "AbortError" });
    await until(async () => (await waitingChecks()) === before, "the server drops the abandoned check");
  });

  test("listen() yields each new message once with its context, and acknowledges it", async () => {
    const world = await freshWorld("listened");
    const agent = world.agent("agent-b");
    await world.post("maria", "some background");
    await agent.inbox({ mark_read: true }); // read: in the history, not new
    const first = await world.post("maria", "@agent-b one");
    const second = await world.post("maria", "@agent-b two");

    const items: InboxItem[] = [];
    for await (const item of agent.listen()) {
      items.push(item);
      if (items.length === 2) break; // `second` is left unread: the loop did not come back for more
    }
    assert.deepEqual(items.map((i) => i.message.id), [first.id, second.id]);
    assert.deepEqual(items[0]?.context.map((m) => m.content), ["some background"]);
    assert.deepEqual(items[1]?.context, [], "the context came once, with the first message");
    assert.deepEqual((await agent.inbox()).new_mentions.map((m) => m.id), [second.id]);

    // A new listen() yields the unread one again. Its context is what this agent's session was
    // not sent before: nothing, the first check sent "one" and "two" as new messages.
    const controller = new AbortController();
    const later: InboxItem[] = [];
    let third = 0;
    for await (const item of agent.listen({ signal: controller.signal })) {
      later.push(item);
      if (item.message.id === second.id) {
        assert.deepEqual(item.context, []);
        // The loop comes back and waits: a post wakes it.
        const before = await waitingChecks();
        void until(async () => (await waitingChecks()) > before, "listen() waits").then(async () => {
          third = (await world.post("maria", "@agent-b three")).id;
        });
      } else {
        assert.equal(item.message.content, "@agent-b three");
        assert.deepEqual(item.context, []);
        assert.equal(item.recalled?.unchanged !== undefined, true, "sent with the recalled past");
        await item.ack();
        controller.abort();
      }
    }
    assert.deepEqual(later.map((i) => i.message.id), [second.id, third]);
    assert.deepEqual((await agent.inbox()).new_mentions, [], "every message was acknowledged");
  });
});

describe("contexts, search, facts, memories, calls", () => {
  test("a context in OpenAI's and Anthropic's shapes, with the report", async () => {
    const world = await freshWorld("shapes");
    await world.post("maria", "hi");
    await world.post("agent-a", "how can I help you?");
    await world.post("maria", "@agent-b please help");
    const agent = world.agent("agent-b");
    const openai = await agent.context({ max_tokens: 4000 });
    assert.deepEqual(openai.messages, [
      { role: "system", content: "You are B." },
      { role: "user", content: "hi", name: "maria" },
      { role: "user", content: "@agent-b please help", name: "maria" },
    ]);
    assert.equal(openai.report.budget, 4000);
    const left = openai.report.items.find((i) => !i.included && i.kind === "message");
    assert.equal(left?.reason, "not-addressed");
    assert.equal(left?.sender, "agent-a");
    assert.equal(openai.call_id, undefined, "not recorded unless asked");

    const anthropic = await agent.context({ format: "anthropic", max_tokens: 4000 });
    assert.equal(anthropic.system, "You are B.");
    assert.deepEqual(anthropic.messages, [{ role: "user", content: "maria: hi\n\nmaria: @agent-b please help" }]);
    assert.equal(anthropic.report.total_tokens > 0, true);
  });

  test("facts: add, list, get, update, delete", async () => {
    const ana = recall.scope("user:ana"); // a person of no other test: facts are the tenant's
    const fact = await ana.add("Drinks only green tea", { category: "preference", confidence: 0.9 });
    assert.equal(fact.scope, "user:ana");
    assert.equal(fact.category, "preference");
    assert.deepEqual((await ana.list()).facts.map((f) => f.content), ["Drinks only green tea"]);
    const changed = await ana.update(fact.id, { content: "Drinks green tea, no sugar" });
    assert.equal((await ana.get(fact.id)).content, changed.content);
    await ana.delete(fact.id);
    await assert.rejects(ana.get(fact.id), NotFoundError);
    await assert.rejects(ana.add("x", { confidence: 2 }), { name: "InvalidInputError", field: "confidence" });
  });

  test("memories and search find messages, memories and people's facts", async () => {
    const world = await freshWorld("searched");
    await world.post("maria", "My invoice 4711 was charged twice", { chat_id: "ticket-7" });
    const memory = await world.addMemory("Invoices are re-issued within 2 days", { importance: 7 });
    assert.equal(memory.owner, null);
    await world.updateMemory(memory.id, { importance: 9 });
    assert.deepEqual((await world.memories()).map((m) => [m.id, m.importance]), [[memory.id, 9]]);
    const own = await world.agent("agent-b").addMemory("maria prefers e-mail about invoices");
    assert.equal(own.owner, "agent-b");
    assert.equal((await world.agent("agent-a").memories()).length, 1, "agent-a does not see agent-b's own");
    await world.addHuman("sam");
    await world.post("sam", "hello");
    await recall.scope("user:sam").add("Pays invoices by card"); // sam's facts: a person of this world

    const hits = await world.search("invoice", { k: 10 });
    assert.deepEqual(new Set(hits.map((h) => h.kind)), new Set(["message", "memory", "fact"]));
    assert.ok(hits.every((h) => h.score > 0 && h.score <= 1));
    const fromB = await world.agent("agent-b").search("invoice", { kinds: ["memory"] });
    assert.deepEqual(fromB.map((h) => h.text).sort(), ["Invoices are re-issued within 2 days", own.content].sort());
    await world.deleteMemory(memory.id);
    await assert.rejects(world.updateMemory(memory.id, { importance: 1 }), NotFoundError);
  });

  test("recorded calls: listed, read, replayed, compared", async () => {
    const world = await freshWorld("calls");
    await world.post("maria", "@agent-b what is my order status?");
    const agent = world.agent("agent-b");
    const built = await agent.context({ record: true, max_tokens: 4000 });
    assert.ok(built.call_id);
    const calls = await agent.calls();
    assert.deepEqual(calls.map((c) => c.id), [built.call_id]);
    assert.equal(calls[0]?.counts.included, built.report.items.filter((i) => i.included).length);
    const call = await agent.call(built.call_id);
    assert.ok(call.items && call.items.length > 0);

    const replay = await agent.replay(built.call_id);
    assert.equal(replay.identical, true);
    assert.deepEqual(replay.messages, built.messages);
    await agent.update({ system_prompt: "You are B, briefly." });
    const changed = await agent.replay(built.call_id);
    assert.equal(changed.identical, false);
    assert.deepEqual(changed.messages?.[0], { role: "system", content: "You are B, briefly." });

    const compared = await agent.compare(built.call_id, { history_limit: 0 });
    assert.equal(compared.identical, false);
    const outcome = await agent.reportOutcome(built.call_id);
    assert.equal(outcome.outcome, "answered");
    await assert.rejects(agent.replay("c_nope"), NotFoundError);
  });

  test("turns, deliveries and tool results", async () => {
    const world = await freshWorld("turns");
    const asked = await world.post("maria", "@agent-b what is the weather?");
    const agent = world.agent("agent-b");
    const decided = await agent.decide(asked.id);
    assert.equal(decided.respond, true);
    assert.equal(await agent.recordLlmCall(), 1);
    const toolCall = { id: "call_1", type: "function", function: { name: "weather", arguments: "{}" } };
    const call = await agent.send("", { metadata: { tool_calls: [toolCall] } }); // the model's tool call
    const result = await agent.postToolResult('{"temp": 21}', "call_1");
    assert.deepEqual(result.delivered_to, ["agent-b"], "a tool result is for its agent alone");
    const { messages } = await agent.context();
    assert.deepEqual(messages.at(-1), { role: "tool", content: '{"temp": 21}', tool_call_id: "call_1" });
    assert.ok(call.message_id < result.message_id);
    const delivered = await agent.deliveries();
    assert.deepEqual(delivered.map((m) => [m.id, m.read]), [[asked.id, false], [result.message_id, false]]);
  });
});

describe("worlds", () => {
  test("export, delete and import a world", async () => {
    const world = await freshWorld("moved");
    const posted = await world.post("maria", "@agent-a keep this");
    const lines = await world.export();
    assert.match(lines.split("\n")[0] ?? "", /"format": ?"recall.world\/1"/);
    const gone = await world.delete();
    assert.equal(gone.messages, 1);
    await assert.rejects(world.info(), NotFoundError);
    const imported = await recall.importWorld(lines);
    assert.equal(imported.id, "moved");
    assert.deepEqual((await world.messages()).messages.map((m) => [m.id, m.content]), [[posted.id, posted.content]]);
    assert.deepEqual((await world.info()).agents, ["agent-a", "agent-b"]);
    assert.ok((await recall.worlds()).some((w) => w.id === "moved"));
    await assert.rejects(recall.importWorld(lines), ConflictError);
  });
});
