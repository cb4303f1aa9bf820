// Node handlers for the conformance suite's `step` (1-x) and `wait` (2-x) requirements, written
// with AWS's durable execution SDK for JavaScript/TypeScript (@aws/durable-execution-sdk-js 2.4.0).
import {
  JitterStrategy, StepSemantics, createRetryStrategy, retryPresets, withDurableExecution,
} from "@aws/durable-execution-sdk-js";

const fixed = (seconds, maxAttempts) => createRetryStrategy({
  maxAttempts, initialDelay: { seconds }, backoffRate: 1, jitter: JitterStrategy.NONE,
});
const noRetry = { retryStrategy: retryPresets.noRetry };

class TransientError extends Error {
  constructor(message) { super(message); this.name = "TransientError"; }
}

export const stepBasic = withDurableExecution(async (event, ctx) => ctx.step(async () => `Hello, ${event}!`));
export const stepNamed = withDurableExecution(async (event, ctx) =>
  ctx.step("custom_step_name", async () => `Hello, ${event}!`));
export const stepSequential = withDurableExecution(async (event, ctx) => {
  const first = await ctx.step(async () => "first");
  return ctx.step(async () => `${first}_second`);
});
export const stepComplex = withDurableExecution(async (event, ctx) =>
  ctx.step(async () => ({ user: { name: event.name, tags: event.tags }, count: event.tags.length })));
export const stepNull = withDurableExecution(async (event, ctx) => ctx.step(async () => null));
export const stepLogger = withDurableExecution(async (event, ctx) => ctx.step(async (stepCtx) => {
  stepCtx.logger.info(`Greeting step started for: ${event}`);
  const result = `Hello, ${event}!`;
  stepCtx.logger.info(`Greeting step completed with: ${result}`);
  return result;
}));
export const stepThenWait = withDurableExecution(async (event, ctx) => {
  const result = await ctx.step(async () => "computed");
  await ctx.wait({ seconds: 2 });
  return result;
});
export const stepReplayCached = withDurableExecution(async (event, ctx) => {
  const result = await ctx.step(async (stepCtx) => { stepCtx.logger.info("step executed"); return "cached_value"; });
  await ctx.wait({ seconds: 1 });
  return result;
});
export const stepReplayRethrow = withDurableExecution(async (event, ctx) => {
  try {
    await ctx.step(async () => { throw new Error("permanent failure"); }, noRetry);
  } catch { /* caught: the execution goes on */ }
  await ctx.wait({ seconds: 1 });
  return "recovered";
});
export const stepRetryThenSucceed = withDurableExecution(async (event, ctx) =>
  ctx.step(async (stepCtx) => {
    if (stepCtx.attempt < 2) throw new Error("transient failure");
    return "Operation succeeded";
  }, { retryStrategy: fixed(1, 3) }));
export const stepRetryExhausted = withDurableExecution(async (event, ctx) =>
  ctx.step(async () => { throw new Error("always fails"); }, { retryStrategy: fixed(1, 4) }));
export const stepDefaultRetry = withDurableExecution(async (event, ctx) => {
  return ctx.step(async (s) => { if (s.attempt < 3) throw new Error("transient failure"); return "third"; });
});
export const stepCustomBackoff = withDurableExecution(async (event, ctx) => {
  const retryStrategy = createRetryStrategy({
    maxAttempts: 5, initialDelay: { seconds: 2 }, backoffRate: 3, jitter: JitterStrategy.NONE,
  });
  return ctx.step(async (s) => { if (s.attempt < 3) throw new Error("transient failure"); return "third"; },
    { retryStrategy });
});
export const stepRetrySpecific = withDurableExecution(async (event, ctx) => {
  const retryStrategy = (error, attempts) => (error.name === "TransientError" && attempts < 3
    ? { shouldRetry: true, delay: { seconds: 1 } } : { shouldRetry: false });
  return ctx.step(async (s) => { if (s.attempt < 2) throw new TransientError("glitch"); return "recovered"; },
    { retryStrategy });
});
export const stepNoRetrySpecific = withDurableExecution(async (event, ctx) => {
  const retryStrategy = (error) => (error.name === "TransientError"
    ? { shouldRetry: false } : { shouldRetry: true, delay: { seconds: 1 } });
  return ctx.step(async () => { throw new TransientError("not retried"); }, { retryStrategy });
});
export const stepAtMostOnce = withDurableExecution(async (event, ctx) =>
  ctx.step("at_most_once_flaky_step", async (stepCtx) => {
    stepCtx.logger.info(`at most once step input: ${event}`);
    process.exit(1);
  }, { retryStrategy: retryPresets.noRetry, semantics: StepSemantics.AtMostOncePerRetry }));
export const stepAtMostOnceRetry = withDurableExecution(async (event, ctx) =>
  ctx.step(async (stepCtx) => {
    stepCtx.logger.info(`at most once step input: ${event}`);
    if (stepCtx.attempt < 2) process.exit(1);
    return "succeeded on second attempt";
  }, { retryStrategy: fixed(1, 3), semantics: StepSemantics.AtMostOncePerRetry }));
export const stepFails = withDurableExecution(async (event, ctx) =>
  ctx.step(async () => { throw new Error("step failed permanently"); }, noRetry));
export const stepCaught = withDurableExecution(async (event, ctx) => {
  let value;
  try {
    value = await ctx.step(async () => { throw new Error("step failed"); }, noRetry);
  } catch {
    value = "fallback";
  }
  return ctx.step(async () => `${value}_result`);
});

export const waitBasic = withDurableExecution(async (event, ctx) => { await ctx.wait({ seconds: 2 }); return null; });
export const waitNamed = withDurableExecution(async (event, ctx) => {
  await ctx.wait("custom_wait_name", { seconds: 2 });
  return null;
});
export const waitSequential = withDurableExecution(async (event, ctx) => {
  await ctx.wait("wait-1", { seconds: 2 });
  await ctx.wait("wait-2", { seconds: 2 });
  return { completedWaits: 2 };
});
export const waitMinutes = withDurableExecution(async (event, ctx) => { await ctx.wait({ minutes: 1 }); return null; });
export const waitHour = withDurableExecution(async (event, ctx) => { await ctx.wait({ hours: 1 }); return null; });
export const stepSerdes = withDurableExecution(async (event, ctx) => ctx.step(async () => event, {
  serdes: {
    serialize: async (v) => JSON.stringify(typeof v === "string" ? v.toUpperCase() : v),
    deserialize: async (d) => (d === undefined ? undefined : JSON.parse(d)),
  },
}));
