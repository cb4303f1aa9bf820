"""`make test-newest-moto`: check that the venv holds the newest moto the range allows, and say
which local patches that moto gets.

Argument: the report of `pip install --dry-run --ignore-installed --report FILE '<range>'` (what
the index offers as the newest in range). Exits 1 when the installed moto is another one.
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import version


def main(report_path: str) -> int:
    with open(report_path, encoding="utf-8") as f:
        report = json.load(f)
    offered = [i["metadata"]["version"] for i in report.get("install", ())
               if i["metadata"]["name"].lower() == "moto"]
    installed = version("moto")
    if offered != [installed]:
        print(f"newest moto in range: {offered or 'none found'}; installed: moto {installed}",
              file=sys.stderr)
        return 1
    from orbit.local import clock, moto_speed

    speed = "on" if moto_speed.supported() else f"off (they were read from moto {moto_speed.MOTO_VERSION}, " \
        f"werkzeug {moto_speed.WERKZEUG_VERSION}; werkzeug here: {version('werkzeug')})"
    print(f"moto {installed}: the newest in range on the index; speed patches {speed}; "
          f"virtual-time clock swap {'on' if clock.moto_clock_supported() else 'off'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
