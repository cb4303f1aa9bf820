#!/usr/bin/env bash
# Re-fetch the console's vendored front-end libraries from npm (pinned versions) into
# layers/orbit/orbit/console/static/vendor/ and check them against the recorded SHA-256.
# The files are committed, so nothing is downloaded at build or run time; this script only
# documents (and repeats) where they came from. Needs npm.
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=layers/orbit/orbit/console/static/vendor
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
( cd "$WORK" && npm pack --silent @dagrejs/dagre@3.1.3 vis-timeline@8.5.4 >/dev/null )
tar xzf "$WORK"/dagrejs-dagre-3.1.3.tgz -C "$WORK" && mv "$WORK/package" "$WORK/dagre"
tar xzf "$WORK"/vis-timeline-8.5.4.tgz -C "$WORK" && mv "$WORK/package" "$WORK/vis"
cp "$WORK/dagre/dist/dagre.min.js" "$WORK/vis/standalone/umd/vis-timeline-graph2d.min.js" \
   "$WORK/vis/styles/vis-timeline-graph2d.min.css" "$DEST/"
# source maps are not shipped
sed -i 's|^//# sourceMappingURL=.*||' "$DEST"/*.js
sed -i 's|/\*# sourceMappingURL=[^*]*\*/||' "$DEST"/*.css
{ echo "dagre (@dagrejs/dagre 3.1.3, npm, MIT):"; cat "$WORK/dagre/LICENSE"; echo
  echo "vis-timeline 8.5.4 (npm, Apache-2.0 OR MIT; used under MIT):"; cat "$WORK/vis/LICENSE.MIT.txt"; } \
  > "$DEST/LICENSES.txt"
( cd "$DEST" && sha256sum -c --quiet <<'SUMS'
4e7993562954bd9adb53992ec4b39ae217bd222d24810891338beb81fac876fe  dagre.min.js
4417af5ae1bab2e84f1748c04efbe6521915c408e6be178b202c064efc4e9e6d  vis-timeline-graph2d.min.js
SUMS
)
echo "vendored: dagre 3.1.3, vis-timeline 8.5.4"
