"""`orbit test` and `orbit simulate`: check a definition's behaviour on the in-memory simulator
(docs/testing-definitions.md). The logic lives in orbit.testing; this is the command-line glue."""

from __future__ import annotations

import argparse
import sys
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
