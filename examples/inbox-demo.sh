#!/usr/bin/env bash
# A real queue for `wrighty inbox`, and the screenshot in docs/inbox.md made from it.
#
#   examples/inbox-demo.sh DIR [SCREENSHOT.svg]
#
# Makes a project in DIR with the example agent (wrighty-example-agent, installed with wrighty),
# a crash retry policy and a dependency; runs a real worker (two at once) until an item has
# failed, one has crashed into a retry and two hang in their runs; then, with SCREENSHOT.svg
# given, runs `wrighty inbox` in a 100x30 tmux window and has Textual save what it drew
# (TEXTUAL_SCREENSHOT), and stops the worker. Without it, it leaves the worker running: run
# `wrighty inbox` in DIR yourself, and `kill <pid>` the worker when done.
set -euo pipefail
dir=$1
shot=${2:+$(realpath -m "$2")}  # before the cd below: a path relative to here
mkdir -p "$dir"
cd "$dir"
[ -d .git ] || git init -q .
[ -f wrighty.json ] || wrighty init >/dev/null
cat > wrighty.json <<'JSON'
{
  "$schema": "./.wrighty/wrighty.schema.json",
  "schemaVersion": 1,
  "store": {"url": "sqlite:///.wrighty/wrighty.db"},
  "worker": {
    "leaseSeconds": 60,
    "heartbeatSeconds": 5,
    "pollSeconds": 1,
    "concurrency": 2,
    "workspaceMode": "directory",
    "defaultAgent": "example",
    "processCrash": {"action": "retry", "maxAttempts": 3, "initialRetryMinutes": 10}
  },
  "agents": {
    "example": {
      "adapter": "command",
      "command": ["wrighty-example-agent"],
      "resumeCommand": ["wrighty-example-agent"]
    }
  }
}
JSON
new() { wrighty create --json "$@" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'; }
failing=$(new --title "Fix the flaky login test" --body "wrighty-example: fail" --queue --priority P0)
new --title "Port the CLI to typer" --body "wrighty-example: crash-kill" --queue --priority P0 >/dev/null
new --title "Write the migration guide" --body "wrighty-example: hang" --queue --priority P1 >/dev/null
new --title "Profile the importer" --body "wrighty-example: hang" --queue --priority P1 >/dev/null
new --title "Ship the login page" --body "wrighty-example: succeed" --queue --after "$failing" >/dev/null
new --title "Tidy the README" --body "wrighty-example: succeed" --queue --priority P3 >/dev/null
new --title "Think about caching" --body "wrighty-example: succeed" >/dev/null

wrighty worker start >worker.log 2>&1 &
worker=$!
# Until both hanging items run (the failure and the crash settle first: they are P0).
for _ in $(seq 100); do
    running=$(wrighty list --state running --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
    [ "$running" = 2 ] && break
    sleep 0.2
done
if [ -z "$shot" ]; then
    echo "worker $worker is running in $dir; run \`wrighty inbox\` there"
    exit 0
fi
socket="wrighty-demo-$$"
tmux -L "$socket" -f /dev/null new-session -d -x 100 -y 30 -c "$PWD" \
    -e TERM=xterm-256color -e TEXTUAL_SCREENSHOT=2 \
    -e TEXTUAL_SCREENSHOT_LOCATION="$(dirname "$shot")" \
    -e TEXTUAL_SCREENSHOT_FILENAME="$(basename "$shot")" \
    wrighty inbox
# Textual saves the screenshot and exits; the session ends with it.
for _ in $(seq 100); do
    tmux -L "$socket" has-session 2>/dev/null || break
    sleep 0.1
done
tmux -L "$socket" kill-server 2>/dev/null || true
kill -INT "$worker"
wait "$worker" || true
echo "saved $shot"
