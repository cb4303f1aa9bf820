// Runs one invocation of a Node durable function for Orbit (orbit/local/durable_runtime.py):
//   node durable_node.mjs <module path> <export name>   (the invocation event as JSON on stdin)
// prints the handler's answer as one JSON line on stdout, prefixed by ORBIT_ANSWER so the handler's
// own console output cannot be mistaken for it. The SDK checkpoints through its own Lambda client
// (AWS_ENDPOINT_URL_LAMBDA points it at Orbit).
import { pathToFileURL } from "node:url";
import { randomUUID } from "node:crypto";

const [modulePath, exportName] = process.argv.slice(2);
let input = "";
for await (const chunk of process.stdin) input += chunk;
const event = JSON.parse(input);
const mod = await import(pathToFileURL(modulePath).href);
const handler = mod[exportName] ?? mod.default?.[exportName];
if (typeof handler !== "function") {
  console.error(`durable function handler: ${modulePath} exports no function ${exportName}`);
  process.exit(2);
}
const deadline = Date.now() + 900_000;
const context = {
  awsRequestId: process.env.ORBIT_REQUEST_ID || randomUUID(),
  functionName: process.env.ORBIT_FUNCTION_NAME || "durable",
  functionVersion: "$LATEST",
  invokedFunctionArn: process.env.ORBIT_FUNCTION_ARN || "",
  memoryLimitInMB: "128",
  logGroupName: `/aws/lambda/${process.env.ORBIT_FUNCTION_NAME || "durable"}`,
  logStreamName: "orbit",
  callbackWaitsForEmptyEventLoop: false,
  getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
};
const answer = await handler(event, context);
process.stdout.write("\nORBIT_ANSWER " + JSON.stringify(answer) + "\n");
process.exit(0);
