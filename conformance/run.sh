#!/usr/bin/env bash
# `make conformance`: AWS's unmodified conformance runner (aws-durable-execution-conformance-tests,
# in .venv-conformance) against Orbit's local durable endpoint (orbit.local.durable_server, in
# .venv), with the Python handlers of conformance/handlers and the mapping of
# conformance/template.yaml. `sam` is conformance/bin/sam (a stand-in that registers the
# template's functions with the endpoint); CloudFormation and CloudWatch Logs calls go to the
# endpoint too. Extra arguments go to the runner (e.g. --suite step wait).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
VENV="${VENV:-$root/.venv}"
CVENV="${CVENV:-$root/.venv-conformance}"
out="${CONFORMANCE_OUT:-$root/build/conformance}"
mkdir -p "$out"
LANGUAGE="${LANGUAGE:-python}"
if [ "$LANGUAGE" = node ]; then
  template="$out/template-node.yaml"
  "$VENV/bin/python" "$here/make_template.py" --node "$template"
else
  template="$here/template.yaml"
  "$VENV/bin/python" "$here/make_template.py"
fi
log="$out/server.log"
PYTHONUNBUFFERED=1 "$VENV/bin/python" -m orbit.local.durable_server --port 0 --path "$here/handlers" >"$log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q "listening on" "$log" && break; sleep 0.1; done
url="$(sed -n 's/^listening on //p' "$log")"
[ -n "$url" ] || { cat "$log"; exit 1; }
export AWS_ENDPOINT_URL_LAMBDA="$url" AWS_ENDPOINT_URL_CLOUDFORMATION="$url" AWS_ENDPOINT_URL_CLOUDWATCH_LOGS="$url"
export AWS_ACCESS_KEY_ID=orbit-local AWS_SECRET_ACCESS_KEY=orbit-local AWS_DEFAULT_REGION=us-east-1
export PATH="$here/bin:$CVENV/bin:$PATH"
cd "$out"
"$CVENV/bin/durable-execution-conformance" --template "$template" --language "$LANGUAGE" \
  --region us-east-1 --name "orbit-$LANGUAGE" --history-dir "$out/history-$LANGUAGE" --max-workers "${WORKERS:-16}" \
  --report console json "$@"
