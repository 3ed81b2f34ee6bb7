// Not a test file of its own: tests/clients/test_typescript_client.py runs it to see a long poll
// from TypeScript woken by a post from Python. It checks the inbox of --agent in --world with
// wait and context, prints "waiting" once the check is asleep on the server, and then the
// check's answer as one line of JSON.
import { parseArgs } from "node:util";

import { client, until, waitingChecks } from "./server.js";

const { values } = parseArgs({ options: { world: { type: "string" }, agent: { type: "string" } } });
const agent = client().world(values.world as string).agent(values.agent as string);

const before = await waitingChecks();
const check = agent.inbox({ wait: true, timeout: 60, include_context: true, mark_read: true });
await until(async () => (await waitingChecks()) > before, "the check is asleep on the server");
console.log("waiting");
console.log(JSON.stringify(await check));
