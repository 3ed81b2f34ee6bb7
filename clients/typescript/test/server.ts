/**
 * The running `recall serve` the tests talk to, from the environment the suite sets
 * (tests/clients/test_typescript_client.py): its URL, the tenant's admin key (it also reads
 * /metrics) and a key bound to the agent `agent-b`.
 */
import { Recall } from "recall-memory";

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: the tests run against a recall server (make test)`);
  return value;
}

export const URL = required("RECALL_URL");
export const KEY = required("RECALL_API_KEY");
export const AGENT_KEY = required("RECALL_AGENT_KEY");

export function client(apiKey: string = KEY): Recall {
  return new Recall({ baseUrl: URL, apiKey });
}

/** How many inbox checks are asleep on the server right now (its /metrics gauge). */
export async function waitingChecks(): Promise<number> {
  const response = await fetch(`${URL}/metrics`, { headers: { authorization: `Bearer ${KEY}` } });
  const text = await response.text();
  const line = text.split("\n").find((l) => l.startsWith("recall_inbox_waiting "));
  if (line === undefined) throw new Error(`no recall_inbox_waiting in /metrics: ${text.slice(0, 200)}`);
  return Number(line.split(" ")[1]);
}

/** Resolves once `condition` holds, checking every 10 ms; fails after `seconds`. */
export async function until(condition: () => Promise<boolean>, what: string, seconds = 10): Promise<void> {
  const deadline = Date.now() + seconds * 1000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
