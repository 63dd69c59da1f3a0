#!/usr/bin/env bash
# A real queue for `wrighty serve`, and the screenshots in docs/web.md made from it.
#
#   examples/web-demo.sh DIR [SCREENSHOTS-DIR]
#
# Makes the queue of examples/inbox-demo.sh in DIR (a real worker, two at once, until an item
# has failed, one has crashed into a retry and two hang in their runs), starts `wrighty serve`
# on a free port, and with SCREENSHOTS-DIR given has a headless Chromium (Debian's, driven by
# Playwright: pip install -e '.[test]') save web-board.png (the board) and web-item.png (the
# failed item's page, its log read to its end) there; then stops the console and the worker.
# Without it, it leaves both running and prints the console's URL.
set -euo pipefail
here=$(dirname "$(realpath "$0")")
dir=$1
shots=${2:+$(realpath -m "$2")}  # before any cd: a path relative to here
said=$("$here/inbox-demo.sh" "$dir")
worker=$(echo "$said" | sed -n 's/^worker \([0-9]*\) is running.*/\1/p')
cd "$dir"
wrighty serve --port 0 >console.out 2>console.log &
console=$!
for _ in $(seq 100); do  # its first line is the URL, with the token
    [ -s console.out ] && break
    sleep 0.1
done
url=$(head -n 1 console.out)
if [ -z "$shots" ]; then
    echo "worker $worker and console $console are running in $dir; open $url"
    exit 0
fi
failed=$(wrighty list --state needs-attention --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
mkdir -p "$shots"
python3 - "$url" "$failed" "$shots" <<'PY'
import sys
from playwright.sync_api import sync_playwright

url, failed, shots = sys.argv[1], sys.argv[2], sys.argv[3]
base = url.split("?", 1)[0]
with sync_playwright() as playwright:
    browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
    page = browser.new_page(viewport={"width": 1200, "height": 760})
    page.goto(url)  # the token becomes a cookie
    page.locator("#board table").first.wait_for()
    page.screenshot(path=f"{shots}/web-board.png")
    page.goto(f"{base}items/{failed}")
    page.locator('#log[data-state="ended"]').wait_for()
    page.screenshot(path=f"{shots}/web-item.png", full_page=False)
    browser.close()
PY
kill -INT "$console" "$worker"
wait "$console" || true
while kill -0 "$worker" 2>/dev/null; do sleep 0.1; done  # inbox-demo.sh's child, not ours
echo "saved $shots/web-board.png $shots/web-item.png"
