/**
 * What recall answers with. The request types come generated from the server's OpenAPI schema
 * (`schema.ts`); the server's schema does not describe its answers, so their shapes are written
 * here, after the server's `to_dict`s (src/recall/server/views.py), and exercised by the tests
 * against a running server. Fields are named as on the wire (snake_case), as the HTTP API
 * documents them (docs/http-api.md).
 */
import type { components, paths } from "./schema.js";

/** A request body of the HTTP API, by its schema name (`MessageIn`, `ContextIn`, …). */
export type Body<Name extends keyof components["schemas"]> = components["schemas"][Name];

/** The query parameters of a GET route of the HTTP API. */
export type Query<Path extends keyof paths> = paths[Path] extends {
  get: { parameters: { query?: infer Q } };
}
  ? NonNullable<Q>
  : never;

export type Channel = "chat" | "call" | "sms" | "email";

export interface WorldInfo {
  id: string;
  name: string | null;
  turn_limit: number | null;
  created_at: string;
}

export interface WorldDetail extends WorldInfo {
  agents: string[];
  humans: string[];
  /** Each chat (`id` null: the world's default chat) with its number of messages. */
  chats: { id: string | null; messages: number }[];
}

export interface Participant {
  world_id: string;
  id: string;
  kind: "agent" | "human";
  created_at?: string;
  [setting: string]: unknown;
}

/** An agent's settings as the server answers them. */
export interface AgentSettings extends Participant {
  kind: "agent";
  system_prompt: string;
  history_limit: number | null;
  max_tokens: number | null;
  context_filter: "addressed" | "all";
  model: string | null;
}

export interface Message {
  id: number;
  world_id: string;
  chat_id: string | null;
  sender: string;
  sender_type: "human" | "agent" | "system" | "world";
  channel: string | null;
  parent_id: number | null;
  content: string;
  /** Who it mentions (`@id` anywhere in the text). */
  mentions: string[];
  /** Who it addresses (a paragraph-beginning mention): those agents answer it. */
  addressed: string[];
  created_at: string;
  metadata: Record<string, unknown>;
}

/** A stored post, with the agents it was delivered to. */
export interface Posted extends Message {
  delivered_to: string[];
}

/** What an agent's send (or tool result) answers. */
export interface Sent {
  message_id: number;
  timestamp: string;
  mentions: string[];
  thread_id: number;
  chat_id: string | null;
  delivered_to: string[];
}

export interface MessagePage {
  messages: (Message & { delivered_to?: string[]; would_respond?: string[] })[];
  /** Pass as `after` for the next page; null on the last page. */
  next_after: number | null;
}

export interface Delivery extends Message {
  read: boolean;
}

/** One item of a context's report: a message, fact, memory or block, in or left out, and why. */
export interface ReportItem {
  kind: string;
  id: number | string | null;
  included: boolean;
  section?: string;
  reason?: string;
  tokens?: number;
  sender?: string;
  chat_id?: string | null;
  [score: string]: unknown;
}

/** What went into a context and what was left out: tokens per section, every item and why. */
export interface ContextReport {
  agent_id: string;
  chat_id: string | null;
  encoding: string;
  budget: number;
  total_tokens: number;
  sections: Record<string, number>;
  history_limit: number;
  context_filter: string;
  incoming_count: number;
  /** Left-out candidates by reason (`not-addressed`, `over-budget`, …). */
  excluded: Record<string, number>;
  items: ReportItem[];
  notes: string[];
}

/** A chat message of OpenAI's Chat Completions API. */
export interface OpenAIMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string | null;
  name?: string;
  tool_calls?: { id: string; type: "function"; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

/** A message of Anthropic's Messages API. */
export interface AnthropicMessage {
  role: "user" | "assistant";
  content: string | Record<string, unknown>[];
}

/** A context in OpenAI's shape: `messages` go straight into `chat.completions.create`. */
export interface OpenAIContext {
  messages: OpenAIMessage[];
  report: ContextReport;
  /** With `record: true`: the id of the model call it was recorded as. */
  call_id?: string;
}

/** A context in Anthropic's shape: `system` and `messages` go straight into `messages.create`. */
export interface AnthropicContext {
  system: string;
  messages: AnthropicMessage[];
  report: ContextReport;
  call_id?: string;
}

/** The recalled past sent with an inbox check (context once: `unchanged` when sent before). */
export interface RecalledPast {
  content: string | null;
  tokens: number;
  unchanged: boolean;
  passages: ReportItem[];
}

export interface ContextMetadata {
  chat_id: string | null;
  total_messages: number;
  oldest_id: number | null;
  newest_id: number | null;
  /** Older context was left out by `context_limit`. */
  truncated: boolean;
  /** Only what this session was not sent before (context once). */
  delta: boolean;
}

/** One inbox check: unread messages the agent should answer, with context when asked. */
export interface InboxCheck {
  new_mentions: Message[];
  context: Message[];
  context_metadata: ContextMetadata;
  /** With `include_context`: the recalled past for the newest mention. */
  recalled?: RecalledPast;
  /** With `include_context` (and `record`, the default): the model call the context was recorded as. */
  call_id?: string;
}

export interface Decision {
  respond: boolean;
  turn_count: number;
  turn_limit: number | null;
  notice: string | null;
  reason: string;
}

export type FactCategory = "preference" | "knowledge" | "context" | "behavior" | "goal" | "correction";

export interface Fact {
  id: number;
  scope: string;
  content: string;
  category: FactCategory;
  confidence: number;
  source: string;
  avoid: string | null;
  created_at: string;
  updated_at: string;
}

export interface FactListing {
  scope: string;
  facts: Fact[];
  sections: Record<string, string>;
}

/** A long-term memory: shared by a world's agents (`owner` null) or one agent's own. */
export interface Memory {
  id: number;
  world_id: string;
  owner: string | null;
  type: string;
  content: string;
  importance: number;
  chat_id: string | null;
  metadata: Record<string, unknown>;
  created_at: string;
  updated_at: string;
  expires_at: string | null;
}

export interface SearchHit {
  kind: "message" | "memory" | "fact";
  source_id: number;
  /** Relevance, 0..1. */
  score: number;
  text: string;
  space: string;
  chat_id: string | null;
  sender: string | null;
  created_at: string;
  importance: number | null;
  similarity: number | null;
  method: string;
  keyword_rank: number | null;
  vector_rank: number | null;
  /** For a fact: its scope (`user:maria`, …). */
  scope: string | null;
}

/** A key-value note an agent keeps for its program. */
export interface Note {
  key: string;
  value: unknown;
  updated_at: string;
  expires_at: string | null;
}

/** One item of a recorded call: what it was, its version, rank and scores, in or left out and why. */
export interface CallItem {
  section: string;
  kind: string;
  id: number | string | null;
  included: boolean;
  rank: number;
  tokens?: number;
  reason?: string;
  version?: number | string;
  [score: string]: unknown;
}

/** A recorded model call: ids and versions of what its context held, never a second copy of the text. */
export interface Call {
  id: string;
  world_id: string;
  agent_id: string;
  chat_id: string | null;
  trigger_id: number | null;
  at: string;
  source: string;
  counts: { included: number; left_out: number };
  digest: string;
  through: number;
  erased: number;
  trigger_erased: boolean;
  outcome: string | null;
  error: string | null;
  /** Read one call (`agent.call(id)`) for its items; a listing has only `counts`. */
  items?: CallItem[];
  [setting: string]: unknown;
}

export interface ItemChange {
  change: string;
  kind: string;
  id: number | string | null;
  a: CallItem | null;
  b: CallItem | null;
  why: string | null;
}

export interface CallDiff {
  identical: boolean;
  settings: Record<string, { a: unknown; b: unknown }>;
  items: ItemChange[];
  tokens: { a: number; b: number };
  notes: string[];
}

/** A call rebuilt from the store (replay) or beside another (compare). */
export interface Replay {
  call: Call;
  /** The model would get the same bytes. */
  identical: boolean;
  now: Call | null;
  diff: CallDiff | null;
  messages: OpenAIMessage[] | null;
  notes: string[];
}

/** What a deletion removed, by kind. */
export type Deleted = Record<string, number | boolean>;
