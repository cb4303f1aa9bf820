// Node handlers for the conformance suite's `plugin` (10-x) requirements: instrumentation plugins
// printing JSON lines that name their execution (the endpoint keeps them, as Lambda's log group).
import { JitterStrategy, createRetryStrategy, retryPresets, withDurableExecution } from "@aws/durable-execution-sdk-js";

const INVOCATION = ["invocation-start", "invocation-end"];
const OPERATION = ["operation-start", "operation-end"];
const ATTEMPT = ["attempt-start", "attempt-end"];

function plugin(name, hooks, faulty = false) {
  let arn;
  const log = (hook, fields) => {
    if (hooks.includes(hook)) {
      process.stdout.write(JSON.stringify({ plugin: name, hook, ...fields, durableExecutionArn: arn }) + "\n");
    }
    if (faulty) throw new Error(`${name} fails in ${hook}`);
  };
  const isStep = (info) => info.type === "STEP";
  return {
    async onInvocationStart(info) { arn = info.executionArn; log("invocation-start", { first: info.isFirstInvocation }); },
    async onInvocationEnd(info) { log("invocation-end", { status: info.status }); },
    async onOperationStart(info) { if (isStep(info)) log("operation-start", { op: info.id }); },
    async onOperationEnd(info) { if (isStep(info)) log("operation-end", { op: info.id, status: info.status }); },
    async onOperationAttemptStart(info) { if (isStep(info)) log("attempt-start", { n: info.attempt, op: info.id }); },
    async onOperationAttemptEnd(info) {
      if (isStep(info)) log("attempt-end", { n: info.attempt, outcome: info.outcome, op: info.id });
    },
  };
}

const greet = async (e, ctx) => ctx.step("greet", async (s) => {
  s.logger.info(`Greeting step running for: ${e}`);
  return `Hello, ${e}!`;
});

export const invocation = withDurableExecution(greet, { plugins: [plugin("CONFPLUGIN", INVOCATION)] });
export const operation = withDurableExecution(greet, { plugins: [plugin("CONFPLUGIN", OPERATION)] });
export const attempts = withDurableExecution(async (e, ctx) => ctx.step(async (s) => {
  if (s.attempt < 2) throw new Error("first attempt fails");
  return "Operation succeeded";
}, { retryStrategy: createRetryStrategy({ maxAttempts: 3, initialDelay: { seconds: 1 }, backoffRate: 1,
  jitter: JitterStrategy.NONE }) }), { plugins: [plugin("CONFPLUGIN", ATTEMPT)] });
export const faulty = withDurableExecution(greet,
  { plugins: [plugin("CONFPLUGIN-FAULTY", [...INVOCATION, ...OPERATION, ...ATTEMPT], true)] });
export const two = withDurableExecution(greet,
  { plugins: [plugin("CONFPLUGIN-A", INVOCATION), plugin("CONFPLUGIN-B", INVOCATION)] });
export const replay = withDurableExecution(async (e, ctx) => { await ctx.wait({ seconds: 2 }); return "waited"; },
  { plugins: [plugin("CONFPLUGIN", INVOCATION)] });
export const failed = withDurableExecution(async (e, ctx) =>
  ctx.step(async () => { throw new Error("always fails"); }, { retryStrategy: retryPresets.noRetry }),
{ plugins: [plugin("CONFPLUGIN", INVOCATION)] });
