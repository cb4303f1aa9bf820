"""`orbit test` and `orbit simulate`: check a definition's behaviour on the in-memory simulator
(docs/testing-definitions.md). The logic lives in orbit.testing; this is the command-line glue."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from orbit.cli.args import UsageError


def cmd_test(args: argparse.Namespace) -> int:
    from orbit.testing.spec_report import find_test_files, junit_xml, run_paths, summary_lines

    files, missing = find_test_files(args.paths)
    if missing:
        raise UsageError("; ".join(missing))
    print(f"collected {len(files)} test file(s)")

    def line(result: Any) -> None:
        word = "PASSED" if result.passed else "FAILED"
        print(f"{result.case.id} {word}", flush=True)

    report = run_paths(args.paths, args.k, on_result=line)
    if not report.results and not report.errors:
        raise UsageError(f"-k {args.k}: no test name contains it" if args.k else "no tests found")
    print("\n".join(summary_lines(report)))
    if args.junit:
        try:
            Path(args.junit).write_text(junit_xml(report), encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"--junit {args.junit}: cannot write it ({exc.strerror or exc})") from None
        print(f"JUnit report: {args.junit}", file=sys.stderr)
    return 0 if report.ok else 1


def _rate(value: str) -> float:
    try:
        rate = float(value)
    except ValueError:
        rate = -1.0
    if not 0.0 <= rate <= 1.0:
        raise argparse.ArgumentTypeError(f"{value!r} is not a rate between 0 and 1, e.g. 0.1")
    return rate


MAX_RUNS = 10_000
"""`orbit simulate --runs` at most: about 5 minutes at 30 ms a run, and its histories in memory."""


def cmd_simulate(args: argparse.Namespace) -> int:
    from orbit.cli.args import require_file
    from orbit.core.definition import load_definition

    require_file(args.file)
    if args.runs < 1:
        raise UsageError(f"--runs {args.runs}: must be at least 1, e.g. --runs 500")
    if args.runs > MAX_RUNS:  # every run and its history is kept for the report: memory grows with N
        raise UsageError(f"--runs {args.runs}: at most {MAX_RUNS} in one call; "
                         "run it again with another --seed for more")
    try:
        from orbit.testing import simulate as sim
    except ImportError as exc:
        raise UsageError(f"orbit simulate needs hypothesis-jsonschema ({exc}); "
                         "install it with: pip install 'orbit-engine[simulate]'") from None
    from orbit.local.text import cut, width

    definition = load_definition(args.file)
    for extra in args.register or []:
        require_file(extra, "--register")
    children = tuple(load_definition(extra) for extra in args.register or [])
    rates = sim.Rates(args.failure_rate, args.timeout_rate, args.crash_rate, args.signal_rate)
    flags = (f"--failure-rate {rates.failure:g} --timeout-rate {rates.timeout:g} "
             f"--crash-rate {rates.crash:g} --signal-rate {rates.signal:g}")
    flags += "".join(f" --register {shlex.quote(extra)}" for extra in args.register or [])
    if args.replay is not None:
        return _replay(args, definition, sim.replay(definition, args.replay, rates, children))
    if args.json:
        return _simulate_json(args, definition, rates, children, flags)
    print(f"simulating {definition.name} v{definition.version}: {args.runs} runs, seed {args.seed} ({flags})")
    began = time.perf_counter()
    summary = sim.simulate(definition, args.runs, args.seed, rates, children)
    seconds = time.perf_counter() - began
    print(f"\n{'outcome':<44} {'runs':>6} {'share':>7}")
    for outcome, n in sorted(summary.outcomes.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"{outcome:<44} {n:>6} {100 * n / args.runs:>6.1f}%")
    failing = summary.failing
    print(f"\ninvariants: {args.runs - len(failing)} of {args.runs} runs hold every invariant")
    for run in failing:
        print(f"\nFAILING seed {run.seed} ({run.outcome}):")
        print(cut(f"  input: {json.dumps(run.input, ensure_ascii=False)}", width()))
        for v in run.violations:
            print(f"  {v}")
        print(f"  replay: orbit simulate {shlex.quote(args.file)} --replay {run.seed} {flags}")
    print(f"\n{args.runs} runs in {seconds:.1f}s ({1000 * seconds / args.runs:.0f} ms a run)")
    return 1 if failing else 0


def _simulate_json(args: argparse.Namespace, definition: Any, rates: Any, children: Any, flags: str) -> int:
    from orbit.testing import simulate as sim

    began = time.perf_counter()
    summary = sim.simulate(definition, args.runs, args.seed, rates, children)
    failing = [{"seed": r.seed, "outcome": r.outcome, "input": r.input, "violations": r.violations,
                "replay": f"orbit simulate {shlex.quote(args.file)} --replay {r.seed} {flags}"}
               for r in summary.failing]
    print(json.dumps({"workflow": definition.name, "version": definition.version, "runs": args.runs,
                      "seed": args.seed, "outcomes": dict(summary.outcomes.most_common()),
                      "failing": failing, "seconds": round(time.perf_counter() - began, 3)}, indent=2))
    return 1 if failing else 0


def _replay(args: argparse.Namespace, definition: Any, run: Any) -> int:
    from orbit.local.text import width
    from orbit.local.timeline import render

    if args.json:
        print(json.dumps({"seed": run.seed, "input": run.input, "outcome": run.outcome,
                          "violations": run.violations, "history": run.history}, indent=2, default=str))
        return 1 if run.violations else 0
    print(f"run seed {run.seed} of {definition.name} v{definition.version}")
    print(f"input: {json.dumps(run.input, ensure_ascii=False)}")
    if run.history:
        print(render(run.history, None, True, width()))
    print(f"outcome: {run.outcome}")
    for v in run.violations:
        print(f"violation: {v}")
    return 1 if run.violations else 0


def add_testing_parsers(sub: Any) -> None:
    sp = sub.add_parser(
        "test",
        help="run the tests in *.test.yaml files on the in-memory simulator (virtual clock, mocked tasks)",
        epilog="examples:\n  orbit test examples/\n"
               "  orbit test examples/order_fulfilment.test.yaml -k declined\n"
               "  orbit test tests/definitions --junit report.xml",
    )
    sp.add_argument("paths", nargs="+", metavar="PATH",
                    help="a test file, or a directory searched for *.test.yaml / *.test.yml / *.test.json")
    sp.add_argument("-k", default=None, metavar="TEXT",
                    help="run only the tests whose name contains TEXT, e.g. -k declined")
    sp.add_argument("--junit", default=None, metavar="FILE",
                    help="also write a JUnit XML report to FILE for CI, e.g. --junit report.xml")
    sp.set_defaults(func=cmd_test)

    sp = sub.add_parser(
        "simulate",
        help="run a definition many times with generated inputs and task outputs and injected failures; "
             "report outcomes and every run that breaks an invariant",
        epilog="examples:\n  orbit simulate examples/order_fulfilment.yaml --runs 500 --seed 1\n"
               "  orbit simulate examples/order_fulfilment.yaml --runs 200 --failure-rate 0.3\n"
               "  orbit simulate examples/order_fulfilment.yaml --replay 2746317213",
    )
    sp.add_argument("file", metavar="FILE",
                    help="a definition (.yaml or .json), e.g. examples/order_fulfilment.yaml")
    sp.add_argument("--runs", type=int, default=100, metavar="N",
                    help="how many runs, 1 to 10000, e.g. --runs 500")
    sp.add_argument("--seed", type=int, default=0, metavar="S",
                    help="the seed every run's own seed is drawn from; the same seed gives the same runs "
                         "(default: 0)")
    sp.add_argument("--replay", type=int, default=None, metavar="RUN_SEED",
                    help="run once with this run seed (as a failing run prints it) and show its timeline")
    sp.add_argument("--failure-rate", type=_rate, default=0.1, metavar="P",
                    help="the share of task calls that fail (half of them retryable), e.g. 0.2")
    sp.add_argument("--timeout-rate", type=_rate, default=0.05, metavar="P",
                    help="the share of task calls that never answer (the step's timeout ends them)")
    sp.add_argument("--crash-rate", type=_rate, default=0.0, metavar="P",
                    help="the share of task calls whose worker dies (the queue delivers them again) "
                         "(default: 0)")
    sp.add_argument("--signal-rate", type=_rate, default=0.9, metavar="P",
                    help="the chance that each signal the workflow waits for is sent (at a random time)")
    sp.add_argument("--register", action="append", metavar="FILE",
                    help="also register this definition, e.g. a child workflow (repeatable), "
                         "e.g. --register examples/invoicing.yaml")
    sp.add_argument("--json", action="store_true",
                    help="print one JSON document: outcomes and failing runs (with --replay: the run and "
                         "its history)")
    sp.set_defaults(func=cmd_simulate)
