// Node handlers for the conformance suite's `parallel` (8-x) requirements.
import { NestingType, withDurableExecution } from "@aws/durable-execution-sdk-js";

const fail = async () => { throw new Error("branch failed"); };
const konst = (v) => async () => v;
const stepOf = (v) => async (ctx) => ctx.step(async () => v);
const seq = (completionConfig) => ({ maxConcurrency: 1, ...(completionConfig ? { completionConfig } : {}) });
const project = (r, keys) => {
  const every = { completionReason: r.completionReason, status: r.status, successCount: r.successCount,
    failureCount: r.failureCount, totalCount: r.totalCount };
  return Object.fromEntries(keys.map((k) => [k, every[k]]));
};
const ALL = ["completionReason", "status", "successCount", "failureCount", "totalCount"];
const NO_STATUS = ["completionReason", "successCount", "failureCount", "totalCount"];
const par = (h) => withDurableExecution(h);

export const basic = par(async (e, ctx) =>
  (await ctx.parallel("parallel", [stepOf("task-1"), stepOf("task-2")], seq())).getResults());
export const unnamed = par(async (e, ctx) => (await ctx.parallel([konst("alpha"), konst("beta")], seq())).getResults());
export const namedBranches = par(async (e, ctx) => (await ctx.parallel("named",
  [{ name: "first", func: konst("one") }, { name: "second", func: konst("two") }], seq())).getResults());
export const types = par(async (e, ctx) =>
  (await ctx.parallel("hetero", [konst("hello"), konst(42), konst({ k: "v" })], seq())).getResults());
export const empty = par(async (e, ctx) => (await ctx.parallel("empty", [])).getResults());
export const failFast = par(async (e, ctx) => project(await ctx.parallel("failfast",
  [konst("ok"), fail, konst("never")], seq({ toleratedFailureCount: 0 })), ALL));
export const rethrow = par(async (e, ctx) => {
  const r = await ctx.parallel("throwing", [fail, konst("never")], seq({ toleratedFailureCount: 0 }));
  r.throwIfError();
  return r.getResults();
});
export const minSuccessful = par(async (e, ctx) => project(await ctx.parallel("min-successful",
  [0, 1, 2, 3].map(konst), seq({ minSuccessful: 2 })), ["completionReason", "successCount", "totalCount"]));
export const tolerated = par(async (e, ctx) => project(await ctx.parallel("tolerated",
  [konst("a"), fail, konst("c")], seq({ toleratedFailureCount: 1 })), ALL));
export const toleranceExceeded = par(async (e, ctx) => project(await ctx.parallel("tolerated-exceeded",
  [fail, fail, konst("c")], seq({ toleratedFailureCount: 1 })), NO_STATUS));
export const concurrent = par(async (e, ctx) =>
  (await ctx.parallel("concurrent", [konst("r0"), konst("r1"), konst("r2")], { maxConcurrency: 2 })).getResults());
export const flat = par(async (e, ctx) => (await ctx.parallel("flat", [stepOf("fa"), stepOf("fb")],
  { maxConcurrency: 1, nesting: NestingType.FLAT })).getResults());
export const pctExceeded = par(async (e, ctx) => project(await ctx.parallel("tolerated-pct",
  [fail, fail, konst("c"), konst("d")], seq({ toleratedFailurePercentage: 25 })), NO_STATUS));
export const waitReplay = par(async (e, ctx) => (await ctx.parallel("replay", [stepOf("b0"), async (c) => {
  await c.wait({ seconds: 2 });
  return "b1";
}], seq())).getResults());
export const itemSerdes = par(async (e, ctx) => (await ctx.parallel("serde", [konst("x"), konst("y")], {
  maxConcurrency: 1,
  itemSerdes: {
    serialize: async (v) => JSON.stringify({ wrapped: v }),
    deserialize: async (d) => (d === undefined ? undefined : JSON.parse(d).wrapped),
  },
})).getResults());
export const allFail = par(async (e, ctx) => project(await ctx.parallel("all-fail",
  [fail, fail, fail], seq({ toleratedFailureCount: 3 })), ALL));
export const minNotReached = par(async (e, ctx) => project(await ctx.parallel("min-not-reached",
  [konst("a"), fail, konst("c")], seq({ minSuccessful: 3 })), ALL));
export const combined = par(async (e, ctx) => project(await ctx.parallel("combined",
  [fail, fail, konst("c"), konst("d")], seq({ minSuccessful: 3, toleratedFailureCount: 1 })), NO_STATUS));
export const badConcurrency = par(async (e, ctx) =>
  (await ctx.parallel("bad-concurrency", [konst("a"), konst("b")], { maxConcurrency: 0 })).getResults());
export const accessors = par(async (e, ctx) => {
  const r = await ctx.parallel("accessors", [konst("a"), fail, konst("c")], seq({ toleratedFailureCount: 1 }));
  return { hasFailure: r.hasFailure, successCount: r.succeeded().length, failureCount: r.failed().length,
    errorCount: r.getErrors().length };
});
export const nested = par(async (e, ctx) => (await ctx.parallel("outer", [async (c) =>
  (await c.parallel("inner", [stepOf("i1"), stepOf("i2")], seq())).getResults()], seq())).getResults());
export const pctBoundary = par(async (e, ctx) => project(await ctx.parallel("pct-boundary",
  [fail, konst("b"), konst("c"), konst("d")], seq({ toleratedFailurePercentage: 25 })), ALL));
