#!/usr/bin/env bash
# Runs idemcheck with the action's args, adding --junit, --json and --html, and
# passes its exit code on (as the step's result and as the exit-code
# output). idemcheck itself appends the Markdown summary to
# $GITHUB_STEP_SUMMARY.
set -uo pipefail
: "${INPUT_ARGS:?the args input is required, such as: certify --cmd ./bin/api --path /orders}"
junit="${INPUT_JUNIT:-idemcheck.xml}"
json="${INPUT_JSON:-idemcheck.json}"
html="${INPUT_HTML:-idemcheck.html}"
# The args are read as a shell would read them, so quotes in the workflow
# keep {{intent}}, JSON bodies and SQL's $1 whole. Only the workflow's own
# author writes them.
eval "args=($INPUT_ARGS)"
case "${args[0]:-}" in
certify | run | check) ;;
*)
	echo "::error::args must start with certify, run or check (got '${args[0]:-}')" >&2
	exit 2
	;;
esac
idemcheck "${args[@]}" --junit "$junit" --json "$json" --html "$html"
code=$?
if [ -n "${GITHUB_OUTPUT:-}" ]; then echo "exit-code=$code" >> "$GITHUB_OUTPUT"; fi
case $code in
0) ;;
1) echo "::error::idemcheck found anomalies: see the job summary, $junit and $html" >&2 ;;
2) echo "::error::idemcheck stopped on a usage error (the line above says which flag)" >&2 ;;
3) echo "::error::idemcheck could not run the target or reach the database" >&2 ;;
4) echo "::error::idemcheck proved nothing either way (inconclusive or every check skipped): see the report" >&2 ;;
esac
exit $code
