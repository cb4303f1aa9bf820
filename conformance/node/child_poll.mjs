// Node handlers for the conformance suite's `child` (3-x), `wait_for_condition` (6-x) and
// `wait_for_callback` (7-x) requirements.
import { existsSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import {
  JitterStrategy, createRetryStrategy, createWaitStrategy, retryPresets, withDurableExecution,
} from "@aws/durable-execution-sdk-js";

const noRetry = { retryStrategy: retryPresets.noRetry };
const fixed = (seconds, maxAttempts) => createRetryStrategy({
  maxAttempts, initialDelay: { seconds }, backoffRate: 1, jitter: JitterStrategy.NONE,
});
const fail = async () => { throw new Error("child step failed"); };
const d = (h) => withDurableExecution(h);
// a log line even while replaying (the SDK's logger is quiet then unless told otherwise)
const logAlways = (ctx, message) => { ctx.configureLogger({ modeAware: false }); ctx.logger.info(message); };

export const childBasic = d(async (e, ctx) => ctx.runInChildContext(undefined, async (c) => c.step(async () => e)));
export const childNamed = d(async (e, ctx) => ctx.runInChildContext(e.name, async (c) => c.step(async () => e.value)));
export const childSequential = d(async (e, ctx) => ctx.runInChildContext("sequential", async (c) => {
  const first = await c.step("first", async () => e);
  return c.step("second", async () => first);
}));
export const childError = d(async (e, ctx) => ctx.runInChildContext("failing_child", async (c) => c.step(fail, noRetry)));
export const childErrorCaught = d(async (e, ctx) => {
  try { await ctx.runInChildContext(undefined, async (c) => c.step(fail, noRetry)); } catch { /* caught */ }
  return ctx.step("recovery", async () => e);
});
export const childNested = d(async (e, ctx) => ctx.runInChildContext("outer", async (c) => {
  await c.step("outer_step", async () => e);
  return c.runInChildContext("inner", async (i) => i.step("inner_step", async () => e));
}));
export const childRetry = d(async (e, ctx) => ctx.runInChildContext("retrying_child", async (c) =>
  c.step(async (s) => { if (s.attempt < 2) throw new Error("first attempt fails"); return e; },
    { retryStrategy: fixed(1, 3) })));
export const childRetryExhausted = d(async (e, ctx) => ctx.runInChildContext("exhausted_child", async (c) =>
  c.step(fail, { retryStrategy: fixed(1, 2) })));
export const childReplayCached = d(async (e, ctx) => {
  const r = await ctx.runInChildContext(undefined, async (c) => c.step(async () => e));
  await ctx.wait({ seconds: 1 });
  return r;
});
export const childStepWait = d(async (e, ctx) => ctx.runInChildContext("step_and_wait", async (c) => {
  const v = await c.step(async () => e);
  await c.wait({ seconds: 1 });
  return v;
}));
export const childLarge = d(async (e, ctx) => {
  const r = await ctx.runInChildContext("large_child", async (c) => {
    logAlways(c, `large child for ${e}`);
    const small = await c.step("small", async () => e);
    return { data: small.repeat(Math.floor(300 * 1024 / Math.max(1, small.length)) + 1) };
  });
  await ctx.wait({ seconds: 1 });
  return { size: r.data.length };
});
export const childInterrupted = d(async (e, ctx) => ctx.runInChildContext(undefined, async (c) =>
  c.step(async (s) => {
    const marker = `${tmpdir()}/orbit-conformance-crashed-${e}`;
    if (!existsSync(marker)) {
      writeFileSync(marker, "1"); // the sandbox dies: the mark outlives it
      await new Promise((r) => setTimeout(r, 2000)); // StepStarted lands first
      process.exit(1);
    }
    return e;
  })));
export const childWaitOnly = d(async (e, ctx) => {
  const v = await ctx.runInChildContext("waiting_child", async (c) => { await c.wait({ seconds: 1 }); return e; });
  return ctx.step("after", async () => v);
});
export const childSerdes = d(async (e, ctx) => ctx.runInChildContext("upper_child", async (c) => c.step(async () => e), {
  serdes: { serialize: async (v) => v.toUpperCase(), deserialize: async (x) => x },
}));
export const childErrorDirect = d(async (e, ctx) => ctx.runInChildContext("throwing_child", async () => {
  throw new Error("thrown in the child body");
}));
export const childNull = d(async (e, ctx) => ctx.runInChildContext("null_child", async () => null));
export const childLoggerOnly = d(async (e, ctx) => {
  const r = await ctx.runInChildContext("logging_child", async (c) => { logAlways(c, `child logged ${e}`); return e; });
  await ctx.wait({ seconds: 1 });
  return r;
});
export const childThenOuter = d(async (e, ctx) => {
  const v = await ctx.runInChildContext("mixed_child", async (c) => {
    const x = await c.step("inner_step", async () => e);
    await c.wait("inner_wait", { seconds: 1 });
    return x;
  });
  const o = await ctx.step("outer_step", async () => v);
  await ctx.wait("outer_wait", { seconds: 1 });
  return o;
});

const until = (pred, seconds = 1, maxAttempts = 60) => createWaitStrategy({
  shouldContinuePolling: pred, maxAttempts, initialDelay: { seconds }, backoffRate: 1, jitter: JitterStrategy.NONE,
});
const inc = async (s) => s + 1;
const poll = (ctx, name, check, waitStrategy, initialState) =>
  ctx.waitForCondition(name, check, { waitStrategy, initialState });
export const pollCounter = d(async (e, ctx) => poll(ctx, undefined, inc, until((s) => s < e), 0));
export const pollImmediate = d(async (e, ctx) => poll(ctx, undefined, async (s) => s, until((s) => s < 5), e));
export const pollNamed = d(async (e, ctx) => poll(ctx, "poll-status", inc, until((s) => s < e), 0));
export const pollSeeded = d(async (e, ctx) => poll(ctx, undefined, inc, until((s) => s < e), 5));
export const pollFixedDelay = d(async (e, ctx) => poll(ctx, undefined, inc,
  (s) => (s >= e ? { shouldContinue: false } : { shouldContinue: true, delay: { seconds: 2 } }), 0));
export const pollExhausted = d(async (e, ctx) => poll(ctx, undefined, inc, until(() => true, 1, 3), 0));
export const pollRaises = d(async (e, ctx) => poll(ctx, undefined, async () => { throw new Error("check failed"); },
  until(() => true), 0));
export const pollRaisesCaught = d(async (e, ctx) => {
  try {
    return await poll(ctx, undefined, async () => { throw new Error("check failed"); }, until(() => true), 0);
  } catch { return "recovered"; }
});
export const pollObject = d(async (e, ctx) => poll(ctx, undefined, async (s) => {
  const attempts = s.attempts + 1;
  return { status: attempts >= 2 ? "DONE" : "PENDING", attempts };
}, until((s) => s.status === "PENDING"), { status: "PENDING", attempts: 0 }));
export const pollNull = d(async (e, ctx) => poll(ctx, undefined, async () => null, until(() => false), 0));
export const pollSerdes = d(async (e, ctx) => ctx.waitForCondition(undefined, async (s) => s + "x", {
  waitStrategy: until((s) => s.length < 2), initialState: "",
  serdes: { serialize: async (v) => "enc:" + v, deserialize: async (x) => (x === undefined ? undefined : x.slice(4)) },
}));
export const pollThenStep = d(async (e, ctx) => {
  const v = await poll(ctx, undefined, inc, until((s) => s < e), 0);
  return ctx.step(async () => v * 10);
});
export const pollTwice = d(async (e, ctx) => {
  const first = await poll(ctx, undefined, inc, until((s) => s < 2), 0);
  return poll(ctx, undefined, inc, until((s) => s < 4), first);
});

const submit = async () => {};
export const wfcBasic = d(async (e, ctx) => ctx.waitForCallback(e, submit));
export const wfcNamed = d(async (e, ctx) => ctx.waitForCallback("approval", submit));
export const wfcUnnamed = d(async (e, ctx) => ctx.waitForCallback(submit));
export const wfcTimeout = d(async (e, ctx) => ctx.waitForCallback(e, submit, { timeout: { seconds: 3 } }));
export const wfcFailureCaught = d(async (e, ctx) => {
  try { return await ctx.waitForCallback(e, submit); } catch { return "recovered"; }
});
export const wfcSubmitterFails = d(async (e, ctx) => ctx.waitForCallback(e, async () => {
  throw new Error("submitter failed");
}, { retryStrategy: fixed(1, 2) }));
export const wfcInChild = d(async (e, ctx) => ctx.runInChildContext("wrapper", async (c) => c.waitForCallback(e, submit)));
export const wfcTwice = d(async (e, ctx) => {
  await ctx.waitForCallback("first", submit);
  return ctx.waitForCallback("second", submit);
});
export const wfcAfterWaitAndStep = d(async (e, ctx) => {
  await ctx.wait({ seconds: 1 });
  await ctx.step(async () => "prepared");
  return ctx.waitForCallback(e, submit);
});
export const wfcJson = d(async (e, ctx) => {
  const r = await ctx.waitForCallback(e, submit);
  return (typeof r === "string" ? JSON.parse(r) : r).status;
});
export const wfcHeartbeatTimeout = d(async (e, ctx) => ctx.waitForCallback(e, submit, { heartbeatTimeout: { seconds: 5 } }));
export const wfcHeartbeatThenSuccess = d(async (e, ctx) =>
  ctx.waitForCallback(e, submit, { heartbeatTimeout: { seconds: 10 } }));
export const wfcTimeoutCaught = d(async (e, ctx) => {
  try { return await ctx.waitForCallback(e, submit, { timeout: { seconds: 3 } }); } catch { return "timed-out-handled"; }
});
