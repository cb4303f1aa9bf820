// A warm Node execution environment for Orbit's durable functions (orbit/local/durable_runtime.py),
// like a Lambda sandbox: it serves one invocation at a time, read as one JSON line on stdin
//   {"module": path, "export": name, "event": {...}, "requestId", "functionName", "functionArn"}
// and answered with a line `ORBIT_ANSWER <json>` on stdout, after the handler's own output (which
// the runtime reads as its log lines). A handler that exits the process ends this environment;
// the runtime records the crash and starts another.
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

async function invoke(msg) {
  const mod = await import(pathToFileURL(msg.module).href);
  const handler = mod[msg.export] ?? mod.default?.[msg.export];
  if (typeof handler !== "function") {
    throw new Error(`durable function handler: ${msg.module} exports no function ${msg.export}`);
  }
  const deadline = Date.now() + 900_000;
  const context = {
    awsRequestId: msg.requestId,
    functionName: msg.functionName,
    functionVersion: "$LATEST",
    invokedFunctionArn: msg.functionArn,
    memoryLimitInMB: "128",
    logGroupName: `/aws/lambda/${msg.functionName}`,
    logStreamName: "orbit",
    callbackWaitsForEmptyEventLoop: false,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
  };
  return handler(msg.event, context);
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (!line.trim()) continue;
  let answer;
  try {
    answer = await invoke(JSON.parse(line));
  } catch (e) {
    answer = { Status: "FAILED", Error: { ErrorType: e?.name ?? "Error", ErrorMessage: String(e?.message ?? e) } };
  }
  process.stdout.write("\nORBIT_ANSWER " + JSON.stringify(answer) + "\n");
}
