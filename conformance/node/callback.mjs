// Node handlers for the conformance suite's `callback` (4-x) requirements.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

const cb = (ctx, name, config) => ctx.createCallback(name, config);

export const basic = withDurableExecution(async (event, ctx) => {
  const [promise] = await cb(ctx, event);
  return promise;
});
export const named = withDurableExecution(async (event, ctx) => {
  const [promise] = await cb(ctx, "approval");
  return promise;
});
export const timeout = withDurableExecution(async (event, ctx) => {
  const [promise] = await cb(ctx, event, { timeout: { seconds: 5 } });
  return promise;
});
export const heartbeatTimeout = withDurableExecution(async (event, ctx) => {
  const [promise] = await cb(ctx, event, { heartbeatTimeout: { seconds: 5 } });
  return promise;
});
export const heartbeatThenSuccess = withDurableExecution(async (event, ctx) => {
  const [promise] = await cb(ctx, event, { heartbeatTimeout: { seconds: 10 } });
  return promise;
});
export const stepThenAwait = withDurableExecution(async (event, ctx) => {
  const [promise] = await cb(ctx, event);
  await ctx.step(async () => "notified");
  return promise;
});
export const stepThenAwaitTimeout = withDurableExecution(async (event, ctx) => {
  const [promise] = await cb(ctx, event, { timeout: { seconds: 5 } });
  await ctx.step(async () => "notified");
  return promise;
});
export const waitThenAwait = withDurableExecution(async (event, ctx) => {
  const [promise] = await cb(ctx, event);
  await ctx.wait({ seconds: 5 });
  return promise;
});
export const timeoutDuringWait = withDurableExecution(async (event, ctx) => {
  const [promise] = await cb(ctx, event, { timeout: { seconds: 3 } });
  await ctx.wait({ seconds: 6 });
  return promise;
});
export const awaitThenWait = withDurableExecution(async (event, ctx) => {
  const [promise] = await cb(ctx, event);
  const result = await promise;
  await ctx.wait({ seconds: 2 });
  return result;
});
export const failureCaught = withDurableExecution(async (event, ctx) => {
  let result;
  try {
    const [promise] = await cb(ctx, event);
    result = await promise;
  } catch (e) {
    result = String(e.message);
  }
  await ctx.wait({ seconds: 2 });
  return result;
});
export const timeoutCaught = withDurableExecution(async (event, ctx) => {
  let outcome = "completed";
  try {
    const [promise] = await cb(ctx, event, { timeout: { seconds: 3 } });
    await promise;
  } catch {
    outcome = "timed out";
  }
  await ctx.wait({ seconds: 2 });
  return outcome;
});
export const aThenB = withDurableExecution(async (event, ctx) => {
  const [a] = await cb(ctx, event[0]);
  const ra = await a;
  const [b] = await cb(ctx, event[1]);
  return [ra, await b];
});
export const bothAFirst = withDurableExecution(async (event, ctx) => {
  const [a] = await cb(ctx, event[0]);
  const [b] = await cb(ctx, event[1]);
  const ra = await a;
  return [ra, await b];
});
export const bothBFirst = withDurableExecution(async (event, ctx) => {
  const [a] = await cb(ctx, event[0]);
  const [b] = await cb(ctx, event[1]);
  const rb = await b;
  return [await a, rb];
});
export const stamped = withDurableExecution(async (event, ctx) => {
  const serdes = { deserialize: async (data) => {
    const obj = JSON.parse(data);
    return { ...obj, timestamp: Math.floor(Date.parse(obj.timestamp) / 1000) };
  } };
  const [promise] = await cb(ctx, event, { serdes });
  return { received: await promise };
});
export const number = withDurableExecution(async (event, ctx) => {
  const serdes = { deserialize: async (data) => Number(JSON.parse(data)) };
  const [promise] = await cb(ctx, event, { serdes });
  const count = await promise;
  return { count, doubled: count * 2 };
});
