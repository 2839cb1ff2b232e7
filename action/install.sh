#!/usr/bin/env bash
# Builds idemcheck from the action's own checkout ($GITHUB_ACTION_PATH, the
# commit the workflow pinned) into $RUNNER_TEMP and puts it on the PATH of
# the job's later steps ($GITHUB_PATH).
set -euo pipefail
: "${GITHUB_ACTION_PATH:?the checkout of the action}" "${RUNNER_TEMP:?a temporary folder}" "${GITHUB_PATH:?the file of PATH additions}"
if ! command -v go >/dev/null 2>&1; then
	echo "::error::idemcheck needs Go 1.26 on the runner: add actions/setup-go with go-version: '1.26' before this step" >&2
	exit 2
fi
bin="$RUNNER_TEMP/idemcheck-bin"
mkdir -p "$bin"
(cd "$GITHUB_ACTION_PATH" && go build -buildvcs=auto -o "$bin/idemcheck" ./cmd/idemcheck)
echo "$bin" >> "$GITHUB_PATH"
"$bin/idemcheck" version
