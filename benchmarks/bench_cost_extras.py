"""What the optional features add per execution: retention, the archive, the search attribute index.

Used by bench_cost.py (last section; `--no-extras` leaves it out): one more run of the same
workflows with ORBIT_ARCHIVE_DAYS set and two search attributes in the definition (one known at
the start, one set by the last step), every request of each feature tagged by the cost meter:

- retention: what the end of an execution does for its expiry (`Engine._retire`, archive apart;
  an execution that ends young wrote its expiry with its items, its end only checks it);
- archive: the history read and the S3 PUT of the gzipped JSON lines (`Engine._archive`), and
  what the objects cost to keep (S3 Standard, $0.023 per GB-month);
- attribute index: the attribute rows (`_put_attributes`: a consistent GetItem of the index row's
  `attrs`, then a PutItem per changed attribute, each also written to gsi1).
"""

from __future__ import annotations

from typing import Any

from bench_cost import PRICE

S3_GB_MONTH = 0.023


class Extras:
    env = {"ORBIT_ARCHIVE_DAYS": "365"}

    def setup(self, svc: Any, meter: Any) -> None:
        def tagged(tag: str, fn: Any) -> Any:
            def call(*args: Any) -> Any:
                outer, meter.tag = meter.tag, tag
                try:
                    return fn(*args)
                finally:
                    meter.tag = outer
            return call

        svc.engine.retention._archive = tagged("archive", svc.engine.retention._archive)
        svc.store._put_attributes = tagged("attribute index", svc.store._put_attributes)

    def report(self, meter: Any, clients: Any, stack: Any, n: int) -> None:
        objects = clients.s3.list_objects_v2(Bucket=stack.bucket, Prefix="archive/").get("Contents", [])
        assert len(objects) == n, f"{len(objects)} archive objects for {n} executions"
        size = sum(o["Size"] for o in objects) / n
        print(f"\n== what the optional features add per execution ({n} executions; archive on, "
              "2 search attributes), $ per million executions at the prices above:")
        for tag, puts in (("retention", 0), ("archive", 1), ("attribute index", 0)):
            wru, rru = meter.tagged_wru[tag] / n, meter.tagged_rru[tag] / n
            requests = meter.tagged_requests[tag] / n
            dollars = wru * PRICE["wru"] + rru * PRICE["rru"] + puts * PRICE["s3_put"]
            print(f"  {tag:16s} {requests:4.1f} requests, {wru:5.2f} WRU, {rru:5.2f} RRU"
                  + (f", {puts} S3 PUT" if puts else "") + f" = ${dollars:6.2f}")
        per_month = size * 1e6 / 1e9 * S3_GB_MONTH
        print(f"  archive objects: {size:,.0f} bytes each (gzipped JSON lines) = ${per_month:.3f} per month "
              "per million executions kept")
