// The README's 30-second tour, as it is written there (tests/clients/test_typescript_client.py
// checks that the README's block is this one, line for line), then what it says it answers.
import assert from "node:assert/strict";
import { test } from "node:test";

// README tour begins
import { Recall } from "recall-memory";

const recall = new Recall(); // $RECALL_URL (else http://127.0.0.1:8765), $RECALL_API_KEY
const world = await recall.createWorld("support", { exist_ok: true });
await world.addAgent("agent-a", { system_prompt: "You are A.", exist_ok: true });
await world.addAgent("agent-b", { system_prompt: "You are B.", exist_ok: true });
await world.addHuman("maria", { exist_ok: true });

const hi = await world.post("maria", "hi"); // public: every agent would answer
await world.post("agent-a", "how can I help you?"); // heard by agent-b, not addressed to it
const asked = await world.post("maria", "@agent-b please help"); // addresses agent-b

const agent = world.agent("agent-b");
const { messages, report } = await agent.context({ max_tokens: 4000 });
// [{ role: "system", content: "You are B." }, { role: "user", content: "hi", name: "maria" },
//  { role: "user", content: "@agent-b please help", name: "maria" }]
report.excluded; // { "not-addressed": 1 }: agent-a's reply, stored but not for agent-b's model
const claude = await agent.context({ format: "anthropic" }); // { system, messages, report }

for await (const { message, context, ack } of agent.listen({ signal: AbortSignal.timeout(60_000) })) {
  // context: the conversation before it, what this agent was not sent yet (context once)
  await agent.send(`On it, ${message.sender}!`, { parent_id: message.id }); // threaded reply
  await ack(); // done (else acknowledged when the loop comes back for the next message)
  break;
}
// README tour ends

test("the tour's context is what the README says", () => {
  assert.deepEqual(messages, [
    { role: "system", content: "You are B." },
    { role: "user", content: "hi", name: "maria" },
    { role: "user", content: "@agent-b please help", name: "maria" },
  ]);
  assert.deepEqual(report.excluded, { "not-addressed": 1 });
  assert.equal(report.agent_id, "agent-b");
  assert.ok(report.total_tokens > 0 && report.total_tokens <= report.budget);
  assert.equal(claude.system, "You are B.");
  assert.deepEqual(claude.messages, [{ role: "user", content: "maria: hi\n\nmaria: @agent-b please help" }]);
});

test("the tour's reply is stored, threaded to the message it answers", async () => {
  const page = await world.messages();
  const reply = page.messages.at(-1);
  assert.equal(reply?.sender, "agent-b");
  assert.equal(reply?.content, "On it, maria!");
  // The first new message for agent-b is maria's public "hi"; acknowledged, it does not come
  // again, and the message addressed to agent-b is next.
  assert.equal(reply?.parent_id, hi.id);
  assert.deepEqual((await agent.inbox()).new_mentions.map((m) => m.id), [asked.id]);
});
