/** One agent of a world: its inbox (long-poll and an async iterator), context, replies and calls. */
import { segment, type Cancellable, type Transport } from "./http.js";
import { addMemoryAt, memoriesAt, searchAt, type MemoryOptions, type SearchOptions } from "./memory-calls.js";
import type {
  AgentSettings,
  Answer,
  AnthropicContext,
  Body,
  Call,
  Decision,
  Delivery,
  Deleted,
  InboxCheck,
  Memory,
  Message,
  OpenAIContext,
  Outcome,
  Query,
  RecalledPast,
  Replay,
  SearchHit,
  Sent,
} from "./records.js";

type AgentPath = "/v1/worlds/{world}/agents/{agent}";
export type InboxOptions = Query<`${AgentPath}/inbox`> & Cancellable;
export type ContextOptions = Omit<Body<"ContextIn">, "format"> & Cancellable;

/** How `agent.listen()` checks: the inbox's options but `wait` and `mark_read`, which it sets. */
export type ListenOptions = Omit<InboxOptions, "wait" | "mark_read">;

/** One new message `listen()` yields, with the context that came with it. */
export interface InboxItem {
  message: Message;
  /**
   * The chat's history before the new messages, as the check sent it (context once): what this
   * agent's session was not sent before, given with the first new message of a check and empty
   * for the others.
   */
  context: Message[];
  /** The recalled past for the newest mention of the check, when it was sent with context. */
  recalled: RecalledPast | undefined;
  /** The model call the check's context was recorded as, when it was. */
  call_id: string | undefined;
  /** Acknowledge it now (the iterator does so when the loop comes back for the next message). */
  ack(): Promise<void>;
}

export class Agent {
  readonly #http: Transport;
  readonly #path: string;

  constructor(
    http: Transport,
    readonly worldId: string,
    readonly id: string,
  ) {
    this.#http = http;
    this.#path = `/v1/worlds/${segment(worldId)}/agents/${segment(id)}`;
  }

  /** Its settings (its own key or the tenant's may read them). */
  settings(options: Cancellable = {}): Promise<AgentSettings> {
    return this.#http.request("GET", this.#path, options);
  }

  /** Change some settings; those left out stay, `null` puts one back to its default. */
  update(changes: Body<"AgentPatch">, options: Cancellable = {}): Promise<AgentSettings> {
    return this.#http.request("PATCH", this.#path, { body: changes, ...options });
  }

  /** Post as the agent; `parent_id` threads the reply to the message it answers. */
  send(content: string, options: Omit<Body<"SendIn">, "content"> & Cancellable = {}): Promise<Sent> {
    const { signal, ...body } = options;
    return this.#http.request("POST", `${this.#path}/send`, { body: { content, ...body }, signal });
  }

  /** The result of one of its own tool calls, stored for it alone. */
  postToolResult(
    content: string,
    callId: string,
    options: Omit<Body<"ToolResultIn">, "content" | "call_id"> & Cancellable = {},
  ): Promise<Sent> {
    const { signal, ...body } = options;
    const sent = { content, call_id: callId, ...body };
    return this.#http.request("POST", `${this.#path}/tool-results`, { body: sent, signal });
  }

  /**
   * Check for new messages. With `wait: true` it long-polls: the request sleeps until a message
   * for the agent is posted or `timeout` seconds pass (default 30, at most 300). Abort `signal`
   * to stop waiting (the promise rejects with the signal's reason).
   */
  inbox(options: InboxOptions = {}): Promise<InboxCheck> {
    const { signal, ...query } = options;
    return this.#http.request("GET", `${this.#path}/inbox`, { query, signal });
  }

  /** Mark messages read; how many were unread. */
  async ack(ids: number[], options: Cancellable = {}): Promise<number> {
    const answer = await this.#http.request<Answer<"Acknowledged">>("POST", `${this.#path}/inbox/ack`, {
      body: { ids },
      ...options,
    });
    return answer.acknowledged;
  }

  /**
   * New messages as they arrive, each once, with its context: long-polls the inbox (with context
   * by default) and yields every new message. A message is acknowledged when the loop comes back
   * for the next one, so leaving the loop (`break`, an exception) leaves the message being handled
   * unread and the next `listen()` yields it again (call `item.ack()` first when done with it).
   * Aborting `signal` ends the loop, a waiting check included.
   *
   * ```ts
   * for await (const { message, context } of agent.listen({ signal })) { … }
   * ```
   */
  async *listen(options: ListenOptions = {}): AsyncGenerator<InboxItem, void, undefined> {
    const { signal, ...query } = options;
    const yielded = new Set<number>();
    while (!signal?.aborted) {
      let check: InboxCheck;
      try {
        check = await this.inbox({ include_context: true, ...query, wait: true, mark_read: false, signal });
      } catch (error) {
        if (signal?.aborted) return;
        throw error;
      }
      let context = check.context;
      for (const message of check.new_mentions) {
        if (yielded.has(message.id)) continue;
        yielded.add(message.id);
        let acknowledged = false;
        const ack = async (): Promise<void> => {
          if (acknowledged) return;
          await this.ack([message.id]);
          acknowledged = true;
        };
        yield { message, context, recalled: check.recalled, call_id: check.call_id, ack };
        context = [];
        await ack();
      }
    }
  }

  /** What it was sent, oldest first, each with whether it is read; marks nothing read. */
  async deliveries(
    options: Query<`${AgentPath}/deliveries`> & Cancellable = {},
  ): Promise<Delivery[]> {
    const { signal, ...query } = options;
    const answer = await this.#http.request<Answer<"Deliveries">>("GET", `${this.#path}/deliveries`, {
      query,
      signal,
    });
    return answer.messages;
  }

  /**
   * The context its next model call gets: `messages` in OpenAI's shape (or, with
   * `format: "anthropic"`, `system` and `messages` in Anthropic's), and the `report` of what went
   * in and what was left out and why. `record: true` records it as a model call (`call_id`).
   */
  context(options?: ContextOptions & { format?: "openai" }): Promise<OpenAIContext>;
  context(options: ContextOptions & { format: "anthropic" }): Promise<AnthropicContext>;
  context(options: ContextOptions & { format?: "openai" | "anthropic" } = {}): Promise<OpenAIContext | AnthropicContext> {
    const { signal, ...body } = options;
    return this.#http.request("POST", `${this.#path}/context`, { body, signal });
  }

  /** Would it answer this message now? The live decision, turn limit included. */
  decide(messageId: number, options: Cancellable = {}): Promise<Decision> {
    return this.#http.request("POST", `${this.#path}/decide`, { body: { message_id: messageId }, ...options });
  }

  /** Count one model call against the turn limit; the new count. */
  async recordLlmCall(options: Cancellable = {}): Promise<number> {
    const answer = await this.#http.request<Answer<"TurnCount">>("POST", `${this.#path}/llm-calls`, options);
    return answer.turn_count;
  }

  /** Its recorded model calls, newest first (counts only; `call(id)` has the items). */
  async calls(options: Query<`${AgentPath}/calls`> & Cancellable = {}): Promise<Call[]> {
    const { signal, ...query } = options;
    const answer = await this.#http.request<Answer<"Calls">>("GET", `${this.#path}/calls`, { query, signal });
    return answer.calls;
  }

  /** One recorded call with its items: ids, versions, scores, reasons. */
  call(callId: string, options: Cancellable = {}): Promise<Call> {
    return this.#http.request("GET", `${this.#path}/calls/${segment(callId)}`, options);
  }

  /** A recorded call rebuilt from the store: `identical` when the model would get the same bytes. */
  replay(callId: string, options: Cancellable = {}): Promise<Replay> {
    return this.#http.request("GET", `${this.#path}/calls/${segment(callId)}/replay`, options);
  }

  /** A call beside another (`other`), or beside its context rebuilt with these settings. */
  compare(callId: string, options: Body<"CompareIn"> & Cancellable = {}): Promise<Replay> {
    const { signal, ...body } = options;
    return this.#http.request("POST", `${this.#path}/calls/${segment(callId)}/compare`, { body, signal });
  }

  /** What came of a call: answered (no `error`) or failed. */
  reportOutcome(
    callId: string,
    error?: string,
    options: Cancellable = {},
  ): Promise<Outcome> {
    const body = error === undefined ? {} : { error };
    return this.#http.request("POST", `${this.#path}/calls/${segment(callId)}/outcome`, { body, ...options });
  }

  /** Search what this agent may see: what was delivered to it, its memories and facts. */
  search(query: string, options: SearchOptions = {}): Promise<SearchHit[]> {
    return searchAt(this.#http, this.#path, query, options);
  }

  /** Keep a long-term memory of its own (other agents do not see it). */
  addMemory(content: string, options: MemoryOptions = {}): Promise<Memory> {
    return addMemoryAt(this.#http, this.#path, content, options);
  }

  /** The world's shared memories and its own, most important first. */
  memories(options: Query<`${AgentPath}/memories`> & Cancellable = {}): Promise<Memory[]> {
    return memoriesAt(this.#http, this.#path, options);
  }

  /** Delete the agent; `erase: true` deletes the messages it wrote too (tenant keys). */
  delete(options: { erase?: boolean } & Cancellable = {}): Promise<Deleted> {
    const { signal, erase } = options;
    return this.#http.request("DELETE", this.#path, { query: { erase }, signal });
  }
}
