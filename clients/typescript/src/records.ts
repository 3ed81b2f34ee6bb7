/**
 * What recall answers with, and the bodies it takes: every type here comes from the server's
 * OpenAPI schema, generated into `schema.ts` (`npm run schema`; the test suite fails when the two
 * drift). The server describes each answer (src/recall/server/answers.py and context_answers.py)
 * and its test suite checks every route's real answers against that description, so these
 * types are the answers' shapes. Fields are named as on the wire (snake_case), as the HTTP API
 * documents them (docs/http-api.md).
 */
import type { components, paths } from "./schema.js";

type Schemas = components["schemas"];

/** A request body of the HTTP API, by its schema name (`MessageIn`, `ContextIn`, …). */
export type Body<Name extends keyof Schemas> = Schemas[Name];

/** An answer of the HTTP API, by its schema name (`WorldInfo`, `InboxCheck`, …). */
export type Answer<Name extends keyof Schemas> = Schemas[Name];

/** The query parameters of a GET route of the HTTP API. */
export type Query<Path extends keyof paths> = paths[Path] extends {
  get: { parameters: { query?: infer Q } };
}
  ? NonNullable<Q>
  : never;

export type Channel = NonNullable<Body<"ContextIn">["channel"]>;

export type WorldInfo = Schemas["WorldInfo"];
/** A world with its participants and each chat (`id` null: the default chat) with its number of messages. */
export type WorldDetail = Schemas["WorldDetail"];
/** An imported world, with the rows stored by table. */
export type ImportedWorld = Schemas["ImportedWorld"];

/** An agent's settings as the server answers them. */
export type AgentSettings = Schemas["AgentSettings"];
export type Human = Schemas["Human"];
/** A participant of a world: an agent with its settings, or a human. */
export type Participant = AgentSettings | Human;

export type Message = Schemas["Message"];
/** A stored post, with the agents it was delivered to. */
export type Posted = Schemas["Posted"];
/** What an agent's send (or tool result) answers. */
export type Sent = Schemas["Sent"];
/** A page of a chat (`next_after`: pass as `after` for the next page; null on the last page). */
export type MessagePage = Schemas["MessagePage"];
export type Delivery = Schemas["Delivery"];

/** One item of a context's report: a message, fact, memory or block, in or left out, and why. */
export type ReportItem = Schemas["ReportItem"];
/** What went into a context and what was left out: tokens per section, every item and why. */
export type ContextReport = Schemas["ContextReport"];
/** A chat message of OpenAI's Chat Completions API. */
export type OpenAIMessage = Schemas["OpenAIMessage"];
/** A message of Anthropic's Messages API. */
export type AnthropicMessage = Schemas["AnthropicMessage"];
/** A context in OpenAI's shape: `messages` go straight into `chat.completions.create`. */
export type OpenAIContext = Schemas["OpenAIContext"];
/** A context in Anthropic's shape: `system` and `messages` go straight into `messages.create`. */
export type AnthropicContext = Schemas["AnthropicContext"];

/** The recalled past sent with an inbox check (context once: `unchanged` when sent before). */
export type RecalledPast = Schemas["RecalledPast"];
export type ContextMetadata = Schemas["ContextMetadata"];
/** One inbox check: unread messages the agent should answer, with context when asked. */
export type InboxCheck = Schemas["InboxCheck"];
export type Decision = Schemas["Decision"];

export type Fact = Schemas["Fact"];
export type FactCategory = Fact["category"];
export type FactListing = Schemas["FactListing"];
/** A long-term memory: shared by a world's agents (`owner` null) or one agent's own. */
export type Memory = Schemas["Memory"];
export type SearchHit = Schemas["SearchHit"];
/** A key-value note an agent keeps for its program. */
export type Note = Schemas["Note"];

/** One item of a recorded call: what it was, its version, rank and scores, in or left out and why. */
export type CallItem = Schemas["CallItem"];
/** A recorded model call: ids and versions of what its context held, never a second copy of the text. */
export type Call = Schemas["Call"];
/** What a caller reported of a call. */
export type Outcome = Schemas["Outcome"];
export type ItemChange = Schemas["ItemChange"];
export type CallDiff = Schemas["CallDiff"];
/** A call rebuilt from the store (replay) or beside another (compare). */
export type Replay = Schemas["Replay"];

/** What a deletion removed, by kind. */
export type Deleted = Schemas["Deleted"];
