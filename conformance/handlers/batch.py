"""Handlers for the conformance suite's `parallel` (8-x) and `map` (9-x) requirements."""

from typing import Any

from aws_durable_execution_sdk_python import DurableContext, ParallelBranch, durable_execution
from aws_durable_execution_sdk_python.config import (
    CompletionConfig,
    Duration,
    MapConfig,
    NestingType,
    ParallelConfig,
)


def _fail(ctx: DurableContext) -> Any:
    raise RuntimeError("branch failed")


def projection(r: Any, *keys: str) -> dict[str, Any]:
    every = {
        "completionReason": r.completion_reason.value,
        "status": r.status.value,
        "successCount": r.success_count,
        "failureCount": r.failure_count,
        "totalCount": r.total_count,
    }
    return {k: every[k] for k in keys}


ALL = ("completionReason", "status", "successCount", "failureCount", "totalCount")
NO_STATUS = ("completionReason", "successCount", "failureCount", "totalCount")


def seq(**completion: Any) -> ParallelConfig:
    return ParallelConfig(max_concurrency=1, completion_config=CompletionConfig(**completion))


def mseq(**completion: Any) -> MapConfig:
    return MapConfig(max_concurrency=1, completion_config=CompletionConfig(**completion))


def const(value: Any) -> Any:
    return lambda ctx: value


def step_of(value: Any) -> Any:
    return lambda ctx: ctx.step(lambda _: value)


@durable_execution
def par_basic(event: Any, context: DurableContext) -> Any:
    return context.parallel(
        [step_of("task-1"), step_of("task-2")], name="parallel", config=seq()
    ).get_results()


@durable_execution
def par_unnamed(event: Any, context: DurableContext) -> Any:
    return context.parallel([const("alpha"), const("beta")], config=seq()).get_results()


@durable_execution
def par_named_branches(event: Any, context: DurableContext) -> Any:
    branches = [ParallelBranch(const("one"), name="first"), ParallelBranch(const("two"), name="second")]
    return context.parallel(branches, name="named", config=seq()).get_results()


@durable_execution
def par_types(event: Any, context: DurableContext) -> Any:
    return context.parallel(
        [const("hello"), const(42), const({"k": "v"})], name="hetero", config=seq()
    ).get_results()


@durable_execution
def par_empty(event: Any, context: DurableContext) -> Any:
    return context.parallel([], name="empty").get_results()


@durable_execution
def par_fail_fast(event: Any, context: DurableContext) -> Any:
    r = context.parallel(
        [const("ok"), _fail, const("never")], name="failfast", config=seq(tolerated_failure_count=0)
    )
    return projection(r, *ALL)


@durable_execution
def par_rethrow(event: Any, context: DurableContext) -> Any:
    r = context.parallel([_fail, const("never")], name="throwing", config=seq(tolerated_failure_count=0))
    r.throw_if_error()
    return r.get_results()


@durable_execution
def par_min_successful(event: Any, context: DurableContext) -> Any:
    r = context.parallel([const(i) for i in range(4)], name="min-successful", config=seq(min_successful=2))
    return projection(r, "completionReason", "successCount", "totalCount")


@durable_execution
def par_tolerated(event: Any, context: DurableContext) -> Any:
    r = context.parallel(
        [const("a"), _fail, const("c")], name="tolerated", config=seq(tolerated_failure_count=1)
    )
    return projection(r, *ALL)


@durable_execution
def par_tolerance_exceeded(event: Any, context: DurableContext) -> Any:
    r = context.parallel(
        [_fail, _fail, const("c")], name="tolerated-exceeded", config=seq(tolerated_failure_count=1)
    )
    return projection(r, *NO_STATUS)


@durable_execution
def par_concurrent(event: Any, context: DurableContext) -> Any:
    return context.parallel(
        [const("r0"), const("r1"), const("r2")], name="concurrent", config=ParallelConfig(max_concurrency=2)
    ).get_results()


@durable_execution
def par_flat(event: Any, context: DurableContext) -> Any:
    config = ParallelConfig(max_concurrency=1, nesting_type=NestingType.FLAT)
    return context.parallel([step_of("fa"), step_of("fb")], name="flat", config=config).get_results()


@durable_execution
def par_pct_exceeded(event: Any, context: DurableContext) -> Any:
    r = context.parallel(
        [_fail, _fail, const("c"), const("d")],
        name="tolerated-pct",
        config=seq(tolerated_failure_percentage=25),
    )
    return projection(r, *NO_STATUS)


@durable_execution
def par_wait_replay(event: Any, context: DurableContext) -> Any:
    def waits(ctx: DurableContext) -> Any:
        ctx.wait(Duration.from_seconds(2))
        return "b1"

    return context.parallel([step_of("b0"), waits], name="replay", config=seq()).get_results()


@durable_execution
def par_all_fail(event: Any, context: DurableContext) -> Any:
    r = context.parallel([_fail, _fail, _fail], name="all-fail", config=seq(tolerated_failure_count=3))
    return projection(r, *ALL)


@durable_execution
def par_min_not_reached(event: Any, context: DurableContext) -> Any:
    r = context.parallel(
        [const("a"), _fail, const("c")], name="min-not-reached", config=seq(min_successful=3)
    )
    return projection(r, *ALL)


@durable_execution
def par_combined(event: Any, context: DurableContext) -> Any:
    r = context.parallel(
        [_fail, _fail, const("c"), const("d")],
        name="combined",
        config=seq(min_successful=3, tolerated_failure_count=1),
    )
    return projection(r, *NO_STATUS)


@durable_execution
def par_bad_concurrency(event: Any, context: DurableContext) -> Any:
    return context.parallel(
        [const("a"), const("b")], name="bad-concurrency", config=ParallelConfig(max_concurrency=0)
    ).get_results()


@durable_execution
def par_accessors(event: Any, context: DurableContext) -> Any:
    r = context.parallel(
        [const("a"), _fail, const("c")], name="accessors", config=seq(tolerated_failure_count=1)
    )
    return {
        "hasFailure": r.has_failure,
        "successCount": len(r.succeeded()),
        "failureCount": len(r.failed()),
        "errorCount": len(r.get_errors()),
    }


@durable_execution
def par_nested(event: Any, context: DurableContext) -> Any:
    def inner(ctx: DurableContext) -> Any:
        return ctx.parallel([step_of("i1"), step_of("i2")], name="inner", config=seq()).get_results()

    return context.parallel([inner], name="outer", config=seq()).get_results()


@durable_execution
def par_pct_boundary(event: Any, context: DurableContext) -> Any:
    r = context.parallel(
        [_fail, const("b"), const("c"), const("d")],
        name="pct-boundary",
        config=seq(tolerated_failure_percentage=25),
    )
    return projection(r, *ALL)


def _item_fail(ctx: DurableContext, item: Any, index: int, items: Any) -> Any:
    if item == "bad":
        raise RuntimeError("item failed")
    return item


@durable_execution
def map_basic(event: Any, context: DurableContext) -> Any:
    def greet(ctx: DurableContext, item: Any, index: int, items: Any) -> Any:
        return ctx.step(lambda _: f"Hello, {item}!")

    return context.map(event, greet, name="map", config=mseq()).get_results()


@durable_execution
def map_unnamed(event: Any, context: DurableContext) -> Any:
    return context.map(event, lambda ctx, item, i, items: item * 2, config=mseq()).get_results()


@durable_execution
def map_index(event: Any, context: DurableContext) -> Any:
    return context.map(
        event, lambda ctx, item, i, items: item + i, name="indexed", config=mseq()
    ).get_results()


@durable_execution
def map_empty(event: Any, context: DurableContext) -> Any:
    return context.map(event, lambda ctx, item, i, items: item, name="empty").get_results()


@durable_execution
def map_fail_fast(event: Any, context: DurableContext) -> Any:
    r = context.map(
        ["ok", "bad", "never"], _item_fail, name="failfast", config=mseq(tolerated_failure_count=0)
    )
    return projection(r, *ALL)


@durable_execution
def map_rethrow(event: Any, context: DurableContext) -> Any:
    r = context.map(["bad", "never"], _item_fail, name="throwing", config=mseq(tolerated_failure_count=0))
    r.throw_if_error()
    return r.get_results()


@durable_execution
def map_min_successful(event: Any, context: DurableContext) -> Any:
    r = context.map(["a", "b", "c", "d"], _item_fail, name="min-successful", config=mseq(min_successful=2))
    return projection(r, "completionReason", "successCount", "totalCount")


@durable_execution
def map_tolerated(event: Any, context: DurableContext) -> Any:
    r = context.map(["a", "bad", "c"], _item_fail, name="tolerated", config=mseq(tolerated_failure_count=1))
    return projection(r, *ALL)


@durable_execution
def map_tolerance_exceeded(event: Any, context: DurableContext) -> Any:
    r = context.map(
        ["bad", "bad", "c"], _item_fail, name="tolerated-exceeded", config=mseq(tolerated_failure_count=1)
    )
    return projection(r, *NO_STATUS)


@durable_execution
def map_pct_exceeded(event: Any, context: DurableContext) -> Any:
    r = context.map(
        ["bad", "bad", "c", "d"],
        _item_fail,
        name="tolerated-pct",
        config=mseq(tolerated_failure_percentage=25),
    )
    return projection(r, *NO_STATUS)


@durable_execution
def map_concurrent(event: Any, context: DurableContext) -> Any:
    return context.map(
        ["r0", "r1", "r2"], _item_fail, name="concurrent", config=MapConfig(max_concurrency=2)
    ).get_results()


@durable_execution
def map_flat(event: Any, context: DurableContext) -> Any:
    def run(ctx: DurableContext, item: Any, index: int, items: Any) -> Any:
        return ctx.step(lambda _: item)

    config = MapConfig(max_concurrency=1, nesting_type=NestingType.FLAT)
    return context.map(["fa", "fb"], run, name="flat", config=config).get_results()


@durable_execution
def map_item_namer(event: Any, context: DurableContext) -> Any:
    config = MapConfig(max_concurrency=1, item_namer=lambda item, index: f"item-{item}")
    return context.map(
        event, lambda ctx, item, i, items: item * 10, name="named", config=config
    ).get_results()


@durable_execution
def map_wait_inside(event: Any, context: DurableContext) -> Any:
    def run(ctx: DurableContext, item: Any, index: int, items: Any) -> Any:
        if index == 1:
            ctx.wait(Duration.from_seconds(1))
        return ctx.step(lambda _: item)

    return context.map(["r0", "r1"], run, name="suspending", config=mseq()).get_results()


@durable_execution
def map_large(event: Any, context: DurableContext) -> Any:
    r = context.map([0, 1, 2, 3], lambda ctx, item, i, items: "x" * 100_000, name="large", config=mseq())
    return projection(r, "successCount", "totalCount")


@durable_execution
def map_then_wait(event: Any, context: DurableContext) -> Any:
    r = context.map(["a", "b"], lambda ctx, item, i, items: item.upper(), name="upper", config=mseq())
    context.wait(Duration.from_seconds(1))
    return r.get_results()


@durable_execution
def map_failed_then_wait(event: Any, context: DurableContext) -> Any:
    r = context.map(["ok", "bad"], _item_fail, name="tolerant", config=mseq(tolerated_failure_count=1))
    context.wait(Duration.from_seconds(1))
    return projection(r, *ALL)


REQUIREMENTS = {
    "8-1": "par_basic",
    "8-2": "par_unnamed",
    "8-3": "par_named_branches",
    "8-4": "par_types",
    "8-5": "par_empty",
    "8-6": "par_fail_fast",
    "8-7": "par_rethrow",
    "8-8": "par_min_successful",
    "8-9": "par_tolerated",
    "8-10": "par_tolerance_exceeded",
    "8-11": "par_concurrent",
    "8-12": "par_flat",
    "8-13": "par_pct_exceeded",
    "8-14": "par_wait_replay",
    "8-16": "par_all_fail",
    "8-17": "par_min_not_reached",
    "8-18": "par_combined",
    "8-19": "par_bad_concurrency",
    "8-20": "par_accessors",
    "8-21": "par_nested",
    "8-22": "par_pct_boundary",
    "9-1": "map_basic",
    "9-2": "map_unnamed",
    "9-3": "map_index",
    "9-4": "map_empty",
    "9-5": "map_fail_fast",
    "9-6": "map_rethrow",
    "9-7": "map_min_successful",
    "9-8": "map_tolerated",
    "9-9": "map_tolerance_exceeded",
    "9-10": "map_pct_exceeded",
    "9-11": "map_concurrent",
    "9-12": "map_flat",
    "9-13": "map_item_namer",
    "9-15": "map_wait_inside",
    "9-16": "map_large",
    "9-17": "map_then_wait",
    "9-18": "map_failed_then_wait",
}
NOT_IMPLEMENTED = {
}
