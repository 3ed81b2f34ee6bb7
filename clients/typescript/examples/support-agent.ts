// An agent built with the Vercel AI SDK that answers from recall: it waits on its inbox, builds
// its context for each new message (OpenAI's shape, with the report), calls the model with
// generateText, posts the reply threaded to the message, and reports the model call's outcome.
//
//   npm run build:examples && node build/examples/support-agent.js --world support --agent triage \
//     --model-url http://127.0.0.1:11434/v1 --model llama3.2        # any OpenAI-compatible server
//
// recall's URL and key come from $RECALL_URL and $RECALL_API_KEY. `--once` answers one message
// and stops (the test suite runs it so, against recall's scripted model server); otherwise it
// runs until interrupted.
import { parseArgs } from "node:util";

import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText, type ModelMessage } from "ai";
import { Recall, type OpenAIMessage } from "recall-memory";

const { values: args } = parseArgs({
  options: {
    world: { type: "string", default: "support" },
    agent: { type: "string", default: "triage" },
    "model-url": { type: "string", default: "http://127.0.0.1:11434/v1" },
    model: { type: "string", default: "llama3.2" },
    once: { type: "boolean", default: false },
  },
});

const model = createOpenAICompatible({
  name: "model",
  baseURL: args["model-url"],
  apiKey: process.env.MODEL_API_KEY,
}).chatModel(args.model);

/**
 * recall's OpenAI-shaped context as the AI SDK's messages. The AI SDK has no `name` on a
 * message: the speaker goes before the text, as recall's Anthropic shape does.
 */
function modelMessages(messages: OpenAIMessage[]): ModelMessage[] {
  return messages.flatMap((m): ModelMessage[] => {
    const content = m.content ?? "";
    if (m.role === "system") return [{ role: "system", content }];
    if (m.role === "user") return [{ role: "user", content: m.name ? `${m.name}: ${content}` : content }];
    if (m.role === "assistant") return content ? [{ role: "assistant", content }] : [];
    return [{ role: "user", content: `tool result: ${content}` }];
  });
}

const agent = new Recall().world(args.world).agent(args.agent);
const stop = new AbortController();
process.once("SIGINT", () => stop.abort());

for await (const { message, ack } of agent.listen({ signal: stop.signal, include_context: false })) {
  // The context for this message, recorded as a model call so it can be replayed later.
  const context = await agent.context({ message_id: message.id, chat_id: message.chat_id, record: true });
  const callId = context.call_id as string;
  try {
    const { text } = await generateText({
      model,
      messages: modelMessages(context.messages),
      // recall's system messages are its own (the system prompt, the memory block, the recalled
      // past), never a user's text: nothing to warn about.
      allowSystemInMessages: true,
    });
    await agent.reportOutcome(callId);
    await agent.send(text, { parent_id: message.id, chat_id: message.chat_id });
  } catch (error) {
    await agent.reportOutcome(callId, String(error));
    throw error;
  }
  const left = context.report.excluded;
  console.log(`answered message ${message.id} (${context.report.total_tokens} tokens; left out: ${JSON.stringify(left)})`);
  await ack();
  if (args.once) break;
}
