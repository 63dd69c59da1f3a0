#!/usr/bin/env bash
# A real queue for `wrighty inbox`, and the screenshot in docs/inbox.md made from it.
#
#   examples/inbox-demo.sh DIR [SCREENSHOT.svg]
#
# Makes a git project in DIR with the example agent (wrighty-example-agent, installed with
# wrighty), a worktree per item, a person's review of every change, two checks (one of them
# fails on the project's own commit too), a crash retry policy and a dependency; runs a real
# worker (two at once) until an item has failed, one has crashed into a retry, one waits for
# review with its change committed on its branch and two hang in their runs; then, with
# SCREENSHOT.svg given, runs `wrighty inbox` in a 100x30 tmux window and has Textual save what
# it drew (TEXTUAL_SCREENSHOT), and stops the worker. Without it, it leaves the worker running:
# run `wrighty inbox` in DIR yourself, and `kill <pid>` the worker when done.
set -euo pipefail
dir=$1
shot=${2:+$(realpath -m "$2")}  # before the cd below: a path relative to here
mkdir -p "$dir"
cd "$dir"
# The project: a README, the notes the example agent adds a line to on every run (in an item's
# worktree, that line is the item's change), its test, and a linter that README.md fails.
if [ ! -d .git ]; then
    git init -q -b main .
    mkdir -p scripts
    cat > README.md <<'MD'
# Notes

A small project for trying wrighty: its agent adds a line to WRIGHTY_EXAMPLE_NOTES.md on every run.
MD
    cat > WRIGHTY_EXAMPLE_NOTES.md <<'MD'
# The example agent's notes

One line a run: when, the item, the run, the session and what it was asked to do.

MD
    cat > test_notes.py <<'PY'
import pathlib
import unittest


class Notes(unittest.TestCase):
    def test_every_run_is_a_list_item(self) -> None:
        lines = pathlib.Path("WRIGHTY_EXAMPLE_NOTES.md").read_text().splitlines()
        runs = [line for line in lines[4:] if line]
        self.assertTrue(all(line.startswith("- ") for line in runs), runs)


if __name__ == "__main__":
    unittest.main()
PY
    cat > scripts/lint.sh <<'SH'
#!/bin/sh
# README.md's lines are at most 80 characters long.
awk 'length > 80 { print FILENAME ":" FNR ": line too long (" length " > 80)"; bad = 1 }
     END { exit bad }' README.md
SH
    chmod +x scripts/lint.sh
    printf '__pycache__/\n' > .gitignore
    git add .gitignore README.md WRIGHTY_EXAMPLE_NOTES.md test_notes.py scripts/lint.sh
    git -c user.name="A. Person" -c user.email=person@example.com commit -q -m "Start the notes"
fi
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
    "workspaceMode": "worktree",
    "defaultAgent": "example",
    "processCrash": {"action": "retry", "maxAttempts": 3, "initialRetryMinutes": 10}
  },
  "verify": {
    "checks": [
      {"name": "tests", "argv": ["python3", "-m", "unittest", "-q"]},
      {"name": "lint", "argv": ["./scripts/lint.sh"]}
    ]
  },
  "completion": {
    "review": "person",
    "author": {"name": "wrighty", "email": "wrighty@example.com"}
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
new --title "Note the new login flow" --body "wrighty-example: succeed" --queue --priority P0 >/dev/null
new --title "Write the migration guide" --body "wrighty-example: hang" --queue --priority P1 >/dev/null
new --title "Profile the importer" --body "wrighty-example: hang" --queue --priority P1 >/dev/null
new --title "Ship the login page" --body "wrighty-example: succeed" --queue --after "$failing" >/dev/null
new --title "Tidy the README" --body "wrighty-example: succeed" --queue --priority P3 >/dev/null
new --title "Think about caching" --body "wrighty-example: succeed" >/dev/null

wrighty worker start >worker.log 2>&1 &
worker=$!
# Until the P0s have settled (a failure, a crash into a retry, a change waiting for review) and
# both hanging items run.
settled() {
    wrighty list --json | python3 -c '
import collections, json, sys
states = collections.Counter(item["state"] for item in json.load(sys.stdin))
wanted = {"needs-attention": 1, "retry-scheduled": 1, "review": 1, "running": 2}
sys.exit(any(states[state] != n for state, n in wanted.items()))'
}
for _ in $(seq 150); do
    settled && break
    sleep 0.2
done
if ! settled; then
    echo "the queue did not settle (wrighty list shows it; worker.log says why); stopping" >&2
    kill -INT "$worker"
    exit 1
fi
if [ -z "$shot" ]; then
    echo "worker $worker is running in $dir; run \`wrighty inbox\` there"
    exit 0
fi
mkdir -p "$(dirname "$shot")"
rm -f "$shot"
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
[ -s "$shot" ] || { echo "wrighty inbox saved no screenshot at $shot" >&2; exit 1; }
echo "saved $shot"
