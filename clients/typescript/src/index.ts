/**
 * recall-memory: the TypeScript client of recall's HTTP API (`recall serve`). Memory and context
 * for LLM agents: worlds, participants, messages, long-poll inboxes, model-ready contexts with
 * their report, search, facts, memories and recorded calls.
 */
export { Recall, World, Scope, type ExistOk } from "./client.js";
export {
  Agent,
  type ContextOptions,
  type InboxItem,
  type InboxOptions,
  type ListenOptions,
} from "./agent.js";
export type { MemoryOptions, SearchOptions } from "./memory-calls.js";
export type { ClientOptions, Cancellable } from "./http.js";
export {
  RecallError,
  InvalidInputError,
  NotFoundError,
  ConflictError,
  AuthenticationError,
  PermissionDeniedError,
  PayloadTooLargeError,
  RetryLaterError,
  RateLimitedError,
  StoreBusyError,
  type Problem,
} from "./errors.js";
export type * from "./records.js";
export type { paths, components, operations } from "./schema.js";
