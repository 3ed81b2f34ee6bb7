/**
 * recall's errors as typed exceptions. Every error the server answers is JSON,
 * `{"error": {"type", "message", "field"?, "problems"?}}`; the client throws the subclass of
 * `RecallError` for its status, carrying recall's error code (`type`) and message as sent.
 */

import type { components } from "./schema.js";

/** One problem of a request that did not validate: the field and what it takes, in words. */
export type Problem = components["schemas"]["FieldProblem"];

/** Base class of every error the server answered (and of a body the client could not read). */
export class RecallError extends Error {
  /** The HTTP status. */
  readonly status: number;
  /** recall's error code: `invalid_input`, `not_found`, `conflict`, `unauthorized`, … */
  readonly code: string;
  /** The field that was wrong, when recall named one (`metadata.score`, `id`, …). */
  readonly field: string | undefined;
  /** Every problem of a request that did not validate (422), each with its field. */
  readonly problems: Problem[];
  /** The whole `error` object as the server sent it. */
  readonly body: Record<string, unknown>;

  constructor(status: number, code: string, message: string, body: Record<string, unknown> = {}) {
    super(message);
    this.name = new.target.name;
    this.status = status;
    this.code = code;
    this.field = typeof body.field === "string" ? body.field : undefined;
    this.problems = Array.isArray(body.problems) ? (body.problems as Problem[]) : [];
    this.body = body;
  }
}

/** 422: recall cannot accept what was sent (`field` says where); nothing was stored. */
export class InvalidInputError extends RecallError {}
/** 404: an unknown world, agent, message, call, fact, memory or route. */
export class NotFoundError extends RecallError {}
/** 409: a world or participant that exists already. */
export class ConflictError extends RecallError {}
/** 401: no API key, or one the server does not know. */
export class AuthenticationError extends RecallError {}
/** 403: the key may not do this (an agent's key acting as another agent, …). */
export class PermissionDeniedError extends RecallError {}
/** 413: a body over the server's cap. */
export class PayloadTooLargeError extends RecallError {}

/** 429 (`rate_limited`) and 503 (`store_busy`): try again after `retryAfter` seconds. */
export class RetryLaterError extends RecallError {
  /** Seconds to wait, from the `Retry-After` header (undefined when it was not sent). */
  readonly retryAfter: number | undefined;

  constructor(status: number, code: string, message: string, body: Record<string, unknown>, retryAfter?: number) {
    super(status, code, message, body);
    this.retryAfter = retryAfter;
  }
}
/** 429: the agent made more requests than its per-minute allowance. */
export class RateLimitedError extends RetryLaterError {}
/** 503: another process held the SQLite store's write lock too long; nothing was written. */
export class StoreBusyError extends RetryLaterError {}

const BY_STATUS: Record<number, typeof RecallError> = {
  401: AuthenticationError,
  403: PermissionDeniedError,
  404: NotFoundError,
  409: ConflictError,
  413: PayloadTooLargeError,
  422: InvalidInputError,
};

/** The error a failed response stands for, from its status, headers and JSON body. */
export async function errorOf(response: Response): Promise<RecallError> {
  const text = await response.text();
  let error: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(text);
    const inner = (parsed as { error?: unknown } | null)?.error;
    if (inner !== null && typeof inner === "object") error = inner as Record<string, unknown>;
  } catch {
    // Not recall's JSON (a proxy's page, say): the status and the text say what happened.
  }
  const code = typeof error.type === "string" ? error.type : `http_${response.status}`;
  const message =
    typeof error.message === "string" ? error.message : `HTTP ${response.status}: ${text.slice(0, 500) || response.statusText}`;
  if (response.status === 429 || response.status === 503) {
    const header = response.headers.get("retry-after");
    const retryAfter = header === null || Number.isNaN(Number(header)) ? undefined : Number(header);
    const Kind = response.status === 429 ? RateLimitedError : StoreBusyError;
    return new Kind(response.status, code, message, error, retryAfter);
  }
  const Kind = BY_STATUS[response.status] ?? RecallError;
  return new Kind(response.status, code, message, error);
}
