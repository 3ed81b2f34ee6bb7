/** The one place requests are made: the base URL, the API key, JSON in and out, errors thrown. */
import { errorOf } from "./errors.js";

/** How the client reaches recall. */
export interface ClientOptions {
  /** Where `recall serve` listens (default `http://127.0.0.1:8765`, or `$RECALL_URL` in Node). */
  baseUrl?: string;
  /** An API key (sent as `Authorization: Bearer KEY`); default `$RECALL_API_KEY` in Node. */
  apiKey?: string;
  /** The `fetch` to use (default the global one). */
  fetch?: typeof fetch;
}

/** What one request sends: a query (unset values are left out), a JSON body, a signal to cancel it. */
export interface RequestOptions {
  query?: object | undefined;
  body?: unknown;
  signal?: AbortSignal | undefined;
}

/** Options every call takes: a signal that cancels the request (the promise then rejects with it). */
export interface Cancellable {
  signal?: AbortSignal;
}

function fromEnv(name: string): string | undefined {
  // `process` exists in Node, Deno and Bun; a browser has none.
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  return env?.[name] || undefined;
}

/** A path segment: world, agent and scope ids as the server reads them (a scope's `/` included). */
export function segment(value: string | number): string {
  return encodeURIComponent(String(value));
}

export class Transport {
  readonly baseUrl: string;
  readonly #apiKey: string | undefined;
  readonly #fetch: typeof fetch;

  constructor(options: ClientOptions = {}) {
    this.baseUrl = (options.baseUrl ?? fromEnv("RECALL_URL") ?? "http://127.0.0.1:8765").replace(/\/+$/, "");
    this.#apiKey = options.apiKey ?? fromEnv("RECALL_API_KEY");
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /** The answer's JSON; a status of 400 or more throws the matching `RecallError`. */
  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const response = await this.send(method, path, options);
    const text = await response.text();
    return (text ? JSON.parse(text) : undefined) as T;
  }

  /** The raw answer (for bodies that are not JSON, such as an export's JSON lines). */
  async send(method: string, path: string, options: RequestOptions = {}): Promise<Response> {
    const url = new URL(this.baseUrl + path);
    for (const [name, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined && value !== null) url.searchParams.set(name, String(value));
    }
    const headers: Record<string, string> = { accept: "application/json" };
    if (this.#apiKey) headers.authorization = `Bearer ${this.#apiKey}`;
    let body: string | undefined;
    if (options.body !== undefined) {
      body = typeof options.body === "string" ? options.body : JSON.stringify(options.body);
      headers["content-type"] = typeof options.body === "string" ? "application/x-ndjson" : "application/json";
    }
    const init: RequestInit = { method, headers };
    if (body !== undefined) init.body = body;
    if (options.signal !== undefined) init.signal = options.signal;
    const response = await this.#fetch(url, init);
    if (response.status >= 400) throw await errorOf(response);
    return response;
  }
}
