#!/usr/bin/env bash
# `sam validate --lint` on template.yaml, in a venv of its own (.venv-sam):
# aws-sam-cli 1.170.0 pins boto3, click and cfn-lint<1.59, which must not leak
# into the project venv. Works offline once installed (needs only a region).
# If the CLI cannot be installed (no registry access), says so and exits 0 on a
# developer's machine (tests/template already transforms and lints the template
# without it), but fails under CI (CI=true): there a skipped check would pass unseen.
set -u
cd "$(dirname "$0")/.."
venv=.venv-sam
sam="$venv/bin/sam"
if [ ! -x "$sam" ]; then
  echo "check_template: installing aws-sam-cli 1.170.0 into $venv (one time)..."
  if ! { python3 -m venv "$venv" && "$venv/bin/pip" install -q "aws-sam-cli==1.170.0"; } >/tmp/orbit-sam-install.log 2>&1; then
    if [ "${CI:-}" = "true" ]; then
      echo "check_template: FAILED - could not install aws-sam-cli under CI (see /tmp/orbit-sam-install.log):" >&2
      tail -n 5 /tmp/orbit-sam-install.log >&2
      exit 1
    fi
    echo "check_template: SKIPPED - could not install aws-sam-cli (see /tmp/orbit-sam-install.log)."
    exit 0
  fi
fi
export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}"
export SAM_CLI_TELEMETRY=0
echo "check_template: sam validate --lint"
exec "$sam" validate --lint --template-file template.yaml
