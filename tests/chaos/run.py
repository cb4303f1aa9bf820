"""Run delivery-chaos seeds from the command line: `python -m tests.chaos.run --seeds 1-100`.

Prints one line per failing seed (what broke, and the command that reproduces it), then the
number of seeds, failures and the time per seed. `--verbose` prints each failing seed's trace
(deliveries, faults, invocations). Exit status 1 when a seed failed.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import chaos_seed as S
import chaos_world as C


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.chaos.run", description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1-100", help="e.g. 1-100, 7, 1-10,42 (default 1-100)")
    parser.add_argument("--verbose", action="store_true", help="print the trace of each failing seed")
    parser.add_argument("--no-faults", action="store_true",
                        help="two decider environments, no injected faults (the control)")
    parser.add_argument("--workloads", default="",
                        help="comma-separated, drawn from these only "
                             f"({', '.join(sorted({**C.W.WORKLOADS, **C.W.EXTRA}))})")
    parser.add_argument("--rates", default="",
                        help="override fault rates, e.g. throttle=0.08,dup_late=0.2 (fields of Profile)")
    parser.add_argument("--triggers", default="",
                        help=f"add trigger workloads: all, or some of {', '.join(C.T.WORKLOADS)} "
                             "(with one regular workload unless --workloads says otherwise)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    profile = C.Profile.none() if args.no_faults else C.Profile()
    if args.rates:
        try:
            rates = {k: float(v) for k, v in (kv.split("=", 1) for kv in args.rates.split(",") if kv)}
        except ValueError:
            parser.error(f"--rates: expected name=number pairs separated by commas, got {args.rates!r}")
        fields = {f.name for f in dataclasses.fields(C.Profile) if f.type in ("float", float)}
        unknown = sorted(set(rates) - fields)
        if unknown:
            parser.error(f"--rates: unknown {unknown}; known: {sorted(fields)}")
        profile = dataclasses.replace(profile, **rates)
    if args.workloads:
        names = tuple(n for n in args.workloads.split(",") if n)
        known = {**C.W.WORKLOADS, **C.W.EXTRA}
        unknown = sorted(set(names) - set(known))
        if unknown:
            parser.error(f"--workloads: unknown {unknown}; known: {sorted(known)}")
        profile = dataclasses.replace(profile, workloads=names,
                                      executions=min(profile.executions, len(names)))
    if args.triggers:
        names = C.T.WORKLOADS if args.triggers == "all" else tuple(n for n in args.triggers.split(",") if n)
        unknown = sorted(set(names) - set(C.T.WORKLOADS))
        if unknown:
            parser.error(f"--triggers: unknown {unknown}; known: all, {', '.join(C.T.WORKLOADS)}")
        profile = dataclasses.replace(profile, triggers=names,
                                      executions=profile.executions if args.workloads else 1)
    flags = " --no-faults" if args.no_faults else ""
    flags += f" --triggers {args.triggers}" if args.triggers else ""
    flags += f" --workloads {args.workloads}" if args.workloads else ""
    flags += f" --rates {args.rates}" if args.rates else ""
    seeds = S.parse_seeds(args.seeds)
    failed = []
    started = time.perf_counter()
    for seed in seeds:
        result = S.run_seed(seed, profile)
        result.flags = flags
        if not result.ok:
            failed.append(seed)
            print(result.report(), flush=True)
            if args.verbose:
                print("  trace:\n    " + "\n    ".join(result.trace), flush=True)
    took = time.perf_counter() - started
    print(f"{len(seeds)} seeds, {len(failed)} failed, {took:.1f}s ({took / max(1, len(seeds)):.2f}s per seed)"
          + (f"; failing seeds: {','.join(map(str, failed))}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
