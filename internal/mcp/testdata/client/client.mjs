// Drives the built `sponson mcp` as an agent's MCP client does, with the
// official TypeScript SDK: spawn the binary on stdio, list the tools, plan,
// apply, read the receipt and the leases, send arguments the tool does not
// take, destroy. Every assertion failing exits 1 with what was seen; at
// the end one JSON line on stdout says what each call answered, for the
// Go test that runs this script (internal/mcp, TestTheTypeScriptClient).
//
// Environment: SPONSON_BIN (the binary), SPONSON_CHECKOUT (its working
// directory, holding release.plan.yaml), SPONSON_TEST_PR (the pull
// request); everything else is handed to the server as it is.
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const bin = process.env.SPONSON_BIN;
const cwd = process.env.SPONSON_CHECKOUT;
const pr = Number(process.env.SPONSON_TEST_PR);
assert.ok(bin && cwd && pr > 0, "SPONSON_BIN, SPONSON_CHECKOUT and SPONSON_TEST_PR must be set");

const transport = new StdioClientTransport({
  command: bin,
  args: ["mcp"],
  cwd,
  env: { ...process.env },
  stderr: "pipe",
});
let serverLog = "";
transport.stderr.on("data", (chunk) => { serverLog += chunk; });

const client = new Client({ name: "sponson-ts-test", version: "1.0.0" });
await client.connect(transport);

const calls = [];

// call calls a tool and reads its result as an agent would: the first
// line of the text is the envelope, the second the summary.
async function call(name, args) {
  const res = await client.callTool({ name, arguments: args });
  assert.equal(res.content.length, 1, `${name}: one content`);
  assert.equal(res.content[0].type, "text", `${name}: text content`);
  const lines = res.content[0].text.split("\n");
  assert.equal(lines.length, 2, `${name}: the envelope and a summary:\n${res.content[0].text}`);
  const envelope = JSON.parse(lines[0]);
  assert.equal(JSON.stringify(envelope).length <= lines[0].length, true);
  assert.deepEqual(res.structuredContent, envelope, `${name}: the structured content is the envelope`);
  assert.equal(envelope.ok, !res.isError, `${name}: ok is !isError:\n${lines[0]}`);
  assert.ok(lines[1].startsWith(envelope.command), `${name}: the summary names the command: ${lines[1]}`);
  calls.push({ tool: name, args, isError: Boolean(res.isError), envelope: lines[0], summary: lines[1] });
  return { res, envelope, summary: lines[1] };
}

try {
  const info = client.getServerVersion();
  assert.equal(info.name, "sponson");
  assert.match(client.getInstructions() ?? "", /envelope/);

  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), ["apply", "locks", "plan", "receipt"]);
  const apply = tools.find((t) => t.name === "apply");
  for (const arg of ["destroy", "reconcile", "confirm", "recreate", "approved_by", "wait", "env", "scope", "plan"]) {
    assert.ok(apply.inputSchema.properties[arg], `apply takes ${arg}`);
  }
  assert.equal(apply.annotations.destructiveHint, true);
  assert.equal(tools.find((t) => t.name === "plan").annotations.readOnlyHint, true);

  const plan = await call("plan", { pr });
  assert.equal(plan.envelope.ok, true, plan.summary);
  assert.equal(plan.envelope.scope, `pr-${pr}`);

  const applied = await call("apply", { scope: `pr-${pr}` });
  assert.equal(applied.envelope.receipt.status, "complete", applied.summary);

  const receipt = await call("receipt", { pr });
  assert.ok(receipt.envelope.receipt.ledger.length > 0, receipt.summary);

  const locks = await call("locks", {});
  assert.deepEqual(locks.envelope.locks, [], locks.summary);

  const bad = await call("apply", { pr: "five", wait: "yes" });
  assert.equal(bad.res.isError, true);
  assert.equal(bad.envelope.error.code, "USAGE", bad.summary);

  const unknown = await call("receipt", { pull_request: pr });
  assert.equal(unknown.envelope.error.code, "USAGE", unknown.summary);

  const destroyed = await call("apply", { pr, destroy: true });
  assert.equal(destroyed.envelope.command, "destroy");
  assert.equal(destroyed.envelope.receipt.destroyed, true, destroyed.summary);
} catch (err) {
  await client.close();
  console.error(`${err.stack ?? err}\ncalls so far: ${JSON.stringify(calls, null, 1)}\nserver stderr:\n${serverLog}`);
  process.exit(1);
}
await client.close();
console.log(JSON.stringify({ calls, serverLog }));
