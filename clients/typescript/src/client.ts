/** The client: worlds, their participants and messages, long-term memories, facts and search. */
import { Agent } from "./agent.js";
import { ConflictError } from "./errors.js";
import { segment, Transport, type Cancellable, type ClientOptions } from "./http.js";
import { addMemoryAt, memoriesAt, searchAt, type MemoryOptions, type SearchOptions } from "./memory-calls.js";
import type {
  AgentSettings,
  Answer,
  Body,
  Deleted,
  Fact,
  FactListing,
  Human,
  ImportedWorld,
  Memory,
  MessagePage,
  Posted,
  Query,
  SearchHit,
  WorldDetail,
  WorldInfo,
} from "./records.js";

/** `exist_ok: true`: one already there is not an error (a setup script can run again). */
export interface ExistOk {
  exist_ok?: boolean;
}

/**
 * recall over HTTP: `new Recall({ baseUrl, apiKey })`. Every method returns a promise of the
 * server's JSON (fields named as on the wire) and rejects with a `RecallError` subclass
 * carrying recall's error code and message.
 */
export class Recall {
  readonly #http: Transport;

  constructor(options: ClientOptions = {}) {
    this.#http = new Transport(options);
  }

  get baseUrl(): string {
    return this.#http.baseUrl;
  }

  /** A handle on a world (nothing is sent until it is used). */
  world(id: string): World {
    return new World(this.#http, id);
  }

  /** Create a world; with `exist_ok: true` one already there is fine. Its handle. */
  async createWorld(id: string, options: Omit<Body<"WorldIn">, "id"> & ExistOk & Cancellable = {}): Promise<World> {
    const { signal, exist_ok, ...body } = options;
    try {
      await this.#http.request("POST", "/v1/worlds", { body: { id, ...body }, signal });
    } catch (error) {
      if (!(exist_ok && error instanceof ConflictError)) throw error;
    }
    return this.world(id);
  }

  /** The caller's worlds (its tenant's, with API keys). */
  async worlds(options: Cancellable = {}): Promise<WorldInfo[]> {
    const answer = await this.#http.request<Answer<"Worlds">>("GET", "/v1/worlds", options);
    return answer.worlds;
  }

  /** The facts of a scope: `user:ID`, `world:WORLD` or `agent:WORLD/AGENT`. */
  scope(scope: string): Scope {
    return new Scope(this.#http, scope);
  }

  /** Import a world exported as JSON lines (`world.export()`), into the caller's tenant. */
  importWorld(lines: string, options: Cancellable = {}): Promise<ImportedWorld> {
    return this.#http.request("POST", "/v1/worlds/import", { body: lines, ...options });
  }
}

export type WorldPath = "/v1/worlds/{world}";

export class World {
  readonly #http: Transport;
  readonly #path: string;

  constructor(
    http: Transport,
    readonly id: string,
  ) {
    this.#http = http;
    this.#path = `/v1/worlds/${segment(id)}`;
  }

  /** The world with its agents, humans and chats. */
  info(options: Cancellable = {}): Promise<WorldDetail> {
    return this.#http.request("GET", this.#path, options);
  }

  /** A handle on one of its agents (nothing is sent until it is used). */
  agent(id: string): Agent {
    return new Agent(this.#http, this.id, id);
  }

  /** Register an agent with its settings; its settings as stored. */
  addAgent(
    id: string,
    settings: Omit<Body<"AgentIn">, "id"> & ExistOk & Cancellable = {},
  ): Promise<AgentSettings> {
    const { signal, exist_ok, ...body } = settings;
    return this.#http.request("POST", `${this.#path}/agents`, { body: { id, ...body }, query: { exist_ok }, signal });
  }

  /** Register a human. */
  addHuman(id: string, options: ExistOk & Cancellable = {}): Promise<Human> {
    const { signal, exist_ok } = options;
    return this.#http.request("POST", `${this.#path}/humans`, { body: { id }, query: { exist_ok }, signal });
  }

  /** Every agent with its settings (tenant keys). */
  async agents(options: Cancellable = {}): Promise<AgentSettings[]> {
    const answer = await this.#http.request<Answer<"Agents">>("GET", `${this.#path}/agents`, options);
    return answer.agents;
  }

  async humans(options: Cancellable = {}): Promise<Human[]> {
    const answer = await this.#http.request<Answer<"Humans">>("GET", `${this.#path}/humans`, options);
    return answer.humans;
  }

  /**
   * Post a message: public, delivered to every agent; a paragraph-beginning `@agent` addresses
   * it (that agent answers). The stored message, with who it was delivered to.
   */
  post(
    sender: string,
    content: string,
    options: Omit<Body<"MessageIn">, "sender" | "content"> & Cancellable = {},
  ): Promise<Posted> {
    const { signal, ...body } = options;
    return this.#http.request("POST", `${this.#path}/messages`, { body: { sender, content, ...body }, signal });
  }

  /** A page of a chat's messages, oldest first: pass `next_after` as `after` for the next. */
  messages(options: Query<`${WorldPath}/messages`> & Cancellable = {}): Promise<MessagePage> {
    const { signal, ...query } = options;
    return this.#http.request("GET", `${this.#path}/messages`, { query, signal });
  }

  /** Search its messages, memories and facts (its people's included): hybrid by default. */
  search(query: string, options: SearchOptions = {}): Promise<SearchHit[]> {
    return searchAt(this.#http, this.#path, query, options);
  }

  /** Add a long-term memory every agent of the world shares. */
  addMemory(content: string, options: MemoryOptions = {}): Promise<Memory> {
    return addMemoryAt(this.#http, this.#path, content, options);
  }

  /** Its shared memories, most important first. */
  memories(options: Query<`${WorldPath}/memories`> & Cancellable = {}): Promise<Memory[]> {
    return memoriesAt(this.#http, this.#path, options);
  }

  /** Change a shared memory in place (those fields left out stay). */
  updateMemory(memoryId: number, changes: Body<"NotePatch">, options: Cancellable = {}): Promise<Memory> {
    return this.#http.request("PATCH", `${this.#path}/memories/${segment(memoryId)}`, { body: changes, ...options });
  }

  async deleteMemory(memoryId: number, options: Cancellable = {}): Promise<void> {
    await this.#http.request("DELETE", `${this.#path}/memories/${segment(memoryId)}`, options);
  }

  /** Delete the world and everything in it: what went, by kind (tenant keys). */
  delete(options: Cancellable = {}): Promise<Deleted> {
    return this.#http.request("DELETE", this.#path, options);
  }

  /** The world as JSON lines (`recall.world/1`), for `recall.importWorld`. */
  async export(options: Cancellable = {}): Promise<string> {
    return (await this.#http.send("GET", `${this.#path}/export`, options)).text();
  }
}

/** A scope's facts: short statements about a person (`user:ID`), a world or an agent. */
export class Scope {
  readonly #http: Transport;
  readonly #path: string;

  constructor(
    http: Transport,
    readonly scope: string,
  ) {
    this.#http = http;
    this.#path = `/v1/scopes/${segment(scope)}`;
  }

  /** Add a fact (`category`, `confidence` 0..1, `source`, `avoid` for corrections). */
  add(content: string, options: Omit<Body<"FactIn">, "content"> & Cancellable = {}): Promise<Fact> {
    const { signal, ...body } = options;
    return this.#http.request("POST", `${this.#path}/facts`, { body: { content, ...body }, signal });
  }

  /** Its facts and summary sections. */
  list(options: Cancellable = {}): Promise<FactListing> {
    return this.#http.request("GET", `${this.#path}/facts`, options);
  }

  get(factId: number, options: Cancellable = {}): Promise<Fact> {
    return this.#http.request("GET", `${this.#path}/facts/${segment(factId)}`, options);
  }

  /** Change some fields of a fact. */
  update(factId: number, changes: Body<"FactPatch">, options: Cancellable = {}): Promise<Fact> {
    return this.#http.request("PATCH", `${this.#path}/facts/${segment(factId)}`, { body: changes, ...options });
  }

  async delete(factId: number, options: Cancellable = {}): Promise<void> {
    await this.#http.request("DELETE", `${this.#path}/facts/${segment(factId)}`, options);
  }

  /** Remove every fact and section; how many facts went. */
  async clear(options: Cancellable = {}): Promise<number> {
    const answer = await this.#http.request<Answer<"FactsRemoved">>("DELETE", `${this.#path}/facts`, options);
    return answer.removed;
  }
}
