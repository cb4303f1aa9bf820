// Node handlers for the conformance suite's `map` (9-x) and `invoke` (5-x) requirements, and the
// functions the invokes call (deployed from the same template, named `<stack>-<LogicalId>`).
import { NestingType, withDurableExecution } from "@aws/durable-execution-sdk-js";

const d = (h) => withDurableExecution(h);
const seq = (completionConfig) => ({ maxConcurrency: 1, ...(completionConfig ? { completionConfig } : {}) });
const project = (r, keys) => {
  const every = { completionReason: r.completionReason, status: r.status, successCount: r.successCount,
    failureCount: r.failureCount, totalCount: r.totalCount };
  return Object.fromEntries(keys.map((k) => [k, every[k]]));
};
const ALL = ["completionReason", "status", "successCount", "failureCount", "totalCount"];
const NO_STATUS = ["completionReason", "successCount", "failureCount", "totalCount"];
const itemFail = async (c, item) => { if (item === "bad") throw new Error("item failed"); return item; };

export const mapBasic = d(async (e, ctx) =>
  (await ctx.map("map", e, async (c, item) => c.step(async () => `Hello, ${item}!`), seq())).getResults());
export const mapUnnamed = d(async (e, ctx) => (await ctx.map(e, async (c, item) => item * 2, seq())).getResults());
export const mapIndex = d(async (e, ctx) => (await ctx.map("indexed", e, async (c, item, i) => item + i, seq())).getResults());
export const mapEmpty = d(async (e, ctx) => (await ctx.map("empty", e, async (c, item) => item)).getResults());
export const mapFailFast = d(async (e, ctx) => project(await ctx.map("failfast", ["ok", "bad", "never"], itemFail,
  seq({ toleratedFailureCount: 0 })), ALL));
export const mapRethrow = d(async (e, ctx) => {
  const r = await ctx.map("throwing", ["bad", "never"], itemFail, seq({ toleratedFailureCount: 0 }));
  r.throwIfError();
  return r.getResults();
});
export const mapMinSuccessful = d(async (e, ctx) => project(await ctx.map("min-successful", ["a", "b", "c", "d"],
  itemFail, seq({ minSuccessful: 2 })), ["completionReason", "successCount", "totalCount"]));
export const mapTolerated = d(async (e, ctx) => project(await ctx.map("tolerated", ["a", "bad", "c"], itemFail,
  seq({ toleratedFailureCount: 1 })), ALL));
export const mapToleranceExceeded = d(async (e, ctx) => project(await ctx.map("tolerated-exceeded",
  ["bad", "bad", "c"], itemFail, seq({ toleratedFailureCount: 1 })), NO_STATUS));
export const mapPctExceeded = d(async (e, ctx) => project(await ctx.map("tolerated-pct", ["bad", "bad", "c", "d"],
  itemFail, seq({ toleratedFailurePercentage: 25 })), NO_STATUS));
export const mapConcurrent = d(async (e, ctx) =>
  (await ctx.map("concurrent", ["r0", "r1", "r2"], itemFail, { maxConcurrency: 2 })).getResults());
export const mapFlat = d(async (e, ctx) => (await ctx.map("flat", ["fa", "fb"], async (c, item) =>
  c.step(async () => item), { maxConcurrency: 1, nesting: NestingType.FLAT })).getResults());
export const mapItemNamer = d(async (e, ctx) => (await ctx.map("named", e, async (c, item) => item * 10,
  { maxConcurrency: 1, itemNamer: (item) => `item-${item}` })).getResults());
export const mapItemSerdes = d(async (e, ctx) => (await ctx.map("items", ["x", "y"], async (c, item) => item.toUpperCase(),
  { maxConcurrency: 1, itemSerdes: { serialize: async (v) => "wrapped:" + v,
    deserialize: async (x) => (x === undefined ? undefined : x.slice("wrapped:".length)) } })).getResults());
export const mapWaitInside = d(async (e, ctx) => (await ctx.map("suspending", ["r0", "r1"], async (c, item, i) => {
  if (i === 1) await c.wait({ seconds: 1 });
  return c.step(async () => item);
}, seq())).getResults());
export const mapLarge = d(async (e, ctx) => project(await ctx.map("large", [0, 1, 2, 3],
  async () => "x".repeat(100_000), seq()), ["successCount", "totalCount"]));
export const mapThenWait = d(async (e, ctx) => {
  const r = await ctx.map("upper", ["a", "b"], async (c, item) => item.toUpperCase(), seq());
  await ctx.wait({ seconds: 1 });
  return r.getResults();
});
export const mapFailedThenWait = d(async (e, ctx) => {
  const r = await ctx.map("tolerant", ["ok", "bad"], itemFail, seq({ toleratedFailureCount: 1 }));
  await ctx.wait({ seconds: 1 });
  return project(r, ALL);
});
const opSerdes = {
  serialize: async (r) => "OPSERDE:" + r.getResults().join(","),
  deserialize: async (x) => {
    const values = x.slice("OPSERDE:".length).split(",");
    return { getResults: () => values, all: values.map((v, i) => ({ index: i, status: "SUCCEEDED", result: v })) };
  },
};
export const mapOpSerdes = d(async (e, ctx) => (await ctx.map("op", ["x", "y"], async (c, item) => item.toUpperCase(),
  { maxConcurrency: 1, serdes: opSerdes })).getResults());
export const mapOpSerdesWait = d(async (e, ctx) => {
  const r = await ctx.map("op", ["x", "y"], async (c, item) => item.toUpperCase(), { maxConcurrency: 1, serdes: opSerdes });
  await ctx.wait({ seconds: 1 });
  return r.getResults();
});

const target = (ctx, logical) => `${ctx.lambdaContext.functionName.replace(/-[^-]+$/, "")}-${logical}`;
export const echo = d(async (e) => e);
export const fails = d(async () => { throw new Error("target function failed"); });
export const measure = d(async (e) => ({ length: e.data.length }));
export const invokeBasic = d(async (e, ctx) => ctx.invoke("invoke", target(ctx, "NodeEcho"), e));
export const invokeNamed = d(async (e, ctx) => ctx.invoke(e.name, target(ctx, "NodeEcho"), e.payload));
export const invokeFails = d(async (e, ctx) => ctx.invoke("invoke", target(ctx, "NodeFails"), e));
export const invokeFailsCaught = d(async (e, ctx) => {
  try { return await ctx.invoke("invoke", target(ctx, "NodeFails"), e); } catch { return "fallback"; }
});
export const invokeLarge = d(async (e, ctx) => ctx.invoke("invoke", target(ctx, "NodeMeasure"), { data: "x".repeat(200_000) }));
export const invokeThenWait = d(async (e, ctx) => {
  const r = await ctx.invoke("invoke", target(ctx, "NodeEcho"), "cached");
  await ctx.wait({ seconds: 1 });
  return r;
});
export const invokeFailsThenWait = d(async (e, ctx) => {
  let r;
  try { r = await ctx.invoke("invoke", target(ctx, "NodeFails"), null); } catch { r = "caught"; }
  await ctx.wait({ seconds: 1 });
  return r;
});
export const stepThenInvoke = d(async (e, ctx) => {
  const v = await ctx.step(async () => "from step");
  return ctx.invoke("invoke", target(ctx, "NodeEcho"), v);
});
export const invokeThenStep = d(async (e, ctx) => {
  const v = await ctx.invoke("invoke", target(ctx, "NodeEcho"), "from invoke");
  return ctx.step(async () => `processed ${v}`);
});
export const invokeInChild = d(async (e, ctx) =>
  ctx.runInChildContext(undefined, async (c) => c.invoke("invoke", target(ctx, "NodeEcho"), "in child")));
export const invokeTwice = d(async (e, ctx) => {
  const a = await ctx.invoke("invoke", target(ctx, "NodeEcho"), "first");
  return [a, await ctx.invoke("invoke", target(ctx, "NodeEcho"), "second")];
});
export const invokePayloadSerdes = d(async (e, ctx) => ctx.invoke("invoke", target(ctx, "NodeEcho"), e, {
  payloadSerdes: { serialize: async (v) => JSON.stringify({ data: v.data.toUpperCase() }), deserialize: async (x) => JSON.parse(x) },
}));
export const invokeResultSerdes = d(async (e, ctx) => ctx.invoke("invoke", target(ctx, "NodeEcho"), e, {
  resultSerdes: { serialize: async (v) => JSON.stringify(v), deserialize: async (x) => x.toUpperCase() },
}));
