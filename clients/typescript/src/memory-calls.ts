/** Search and long-term memories: the calls a world and an agent make alike, each at its own path
 * (`/v1/worlds/{world}` or `/v1/worlds/{world}/agents/{agent}`). */
import type { Cancellable, Transport } from "./http.js";
import type { Answer, Body, Memory, SearchHit } from "./records.js";

export type SearchOptions = Omit<Body<"SearchIn">, "query"> & Cancellable;
export type MemoryOptions = Omit<Body<"NoteIn">, "content"> & Cancellable;

/** The hits of a search at `path`. */
export async function searchAt(
  http: Transport,
  path: string,
  query: string,
  options: SearchOptions,
): Promise<SearchHit[]> {
  const { signal, ...body } = options;
  const answer = await http.request<Answer<"SearchResults">>("POST", `${path}/search`, {
    body: { query, ...body },
    signal,
  });
  return answer.results;
}

/** A new memory kept at `path`. */
export function addMemoryAt(http: Transport, path: string, content: string, options: MemoryOptions): Promise<Memory> {
  const { signal, ...body } = options;
  return http.request("POST", `${path}/memories`, { body: { content, ...body }, signal });
}

/** The memories listed at `path`, most important first. */
export async function memoriesAt(
  http: Transport,
  path: string,
  options: { signal?: AbortSignal } & object,
): Promise<Memory[]> {
  const { signal, ...query } = options;
  const answer = await http.request<Answer<"Memories">>("GET", `${path}/memories`, { query, signal });
  return answer.memories;
}
