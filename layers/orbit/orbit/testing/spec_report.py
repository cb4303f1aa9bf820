"""Find test files, run them, and report like pytest (and as JUnit XML for CI)."""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from orbit.errors import ValidationError
from orbit.testing.spec import load_suite
from orbit.testing.spec_run import Result, run_case

SUFFIXES = (".test.yaml", ".test.yml", ".test.json")


def find_test_files(paths: list[str]) -> tuple[list[Path], list[str]]:
    """Test files under `paths` (files given by name, directories searched), and the paths that are
    neither a file nor a directory holding one."""
    found: list[Path] = []
    missing: list[str] = []
    for p in map(Path, paths):
        if p.is_file():
            found.append(p)
        elif p.is_dir():
            files = sorted(f for f in p.rglob("*") if f.is_file() and f.name.endswith(SUFFIXES))
            if not files:
                missing.append(f"{p}: no test files in it (names ending {', '.join(SUFFIXES)})")
            found.extend(files)
        else:
            missing.append(f"{p}: no such file or directory")
    return list(dict.fromkeys(found)), missing


@dataclass
class Report:
    results: list[Result] = field(default_factory=list)
    errors: list[tuple[str, list[str]]] = field(default_factory=list)  # file -> its problems
    seconds: float = 0.0

    @property
    def failed(self) -> list[Result]:
        return [r for r in self.results if not r.passed]

    @property
    def ok(self) -> bool:
        return not self.failed and not self.errors


def run_paths(paths: list[str], select: str | None = None,
              on_result: Callable[[Result], None] | None = None) -> Report:
    """Run every test in the files under `paths` (only those whose name contains `select`)."""
    began = time.perf_counter()
    report = Report()
    files, _ = find_test_files(paths)
    for path in files:
        try:
            suite = load_suite(path)
        except ValidationError as exc:
            source = getattr(exc, "source", None) or str(path)
            report.errors.append((str(path), [f"{source}: {p}" for p in exc.problems]))
            continue
        for case in suite.cases:
            if select and select not in case.name:
                continue
            result = run_case(suite, case)
            report.results.append(result)
            if on_result:
                on_result(result)
    report.seconds = time.perf_counter() - began
    return report


def summary_lines(report: Report) -> list[str]:
    """The pytest-like tail: each failure with its diffs, each unloadable file, then the count."""
    out: list[str] = []
    if report.errors:
        out.append(_rule("ERRORS"))
        for file, problems in report.errors:
            out.append(_rule(f"ERROR loading {file}", "_"))
            out.extend(problems)
    if report.failed:
        out.append(_rule("FAILURES"))
        for r in report.failed:
            out.append(_rule(r.case.id, "_"))
            if r.status:
                out.append(f"final status: {r.status}")
            for m in r.mismatches:
                out.extend(m.lines())
        out.append(_rule("short test summary info"))
        for r in report.failed:
            first = r.mismatches[0]
            out.append(f"FAILED {r.case.id} - {first.path}: {first.message}")
    passed = len(report.results) - len(report.failed)
    parts = [f"{len(report.failed)} failed"] if report.failed else []
    parts += [f"{passed} passed"] + ([f"{len(report.errors)} error"] if report.errors else [])
    out.append(_rule(f"{', '.join(parts)} in {report.seconds:.2f}s"))
    return out


def _rule(title: str, char: str = "=") -> str:
    side = max(3, (78 - len(title) - 2) // 2)
    return f"{char * side} {title} {char * side}"


def junit_xml(report: Report) -> str:
    """One <testsuite> per test file; a failed expectation is a <failure> holding the diffs."""
    root = ET.Element("testsuites", name="orbit test", tests=str(len(report.results)),
                      failures=str(len(report.failed)), errors=str(len(report.errors)),
                      time=f"{report.seconds:.3f}")
    by_file: dict[str, list[Result]] = {}
    for r in report.results:
        by_file.setdefault(r.case.file, []).append(r)
    for file, results in by_file.items():
        suite = ET.SubElement(root, "testsuite", name=file, tests=str(len(results)),
                              failures=str(sum(not r.passed for r in results)), errors="0",
                              time=f"{sum(r.seconds for r in results):.3f}")
        for r in results:
            case = ET.SubElement(suite, "testcase", classname=file, name=r.case.name, time=f"{r.seconds:.3f}")
            if not r.passed:
                first = r.mismatches[0]
                failure = ET.SubElement(case, "failure", message=f"{first.path}: {first.message}")
                failure.text = "\n".join(line for m in r.mismatches for line in m.lines())
    for file, problems in report.errors:
        suite = ET.SubElement(root, "testsuite", name=file, tests="1", failures="0", errors="1", time="0")
        case = ET.SubElement(suite, "testcase", classname=file, name="load")
        error = ET.SubElement(case, "error", message=problems[0] if problems else "cannot load")
        error.text = "\n".join(problems)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
