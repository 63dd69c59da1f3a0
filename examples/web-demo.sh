#!/usr/bin/env bash
# A real queue for `wrighty serve`, and the screenshots in docs/web.md made from it.
#
#   examples/web-demo.sh DIR [SCREENSHOTS-DIR]
#
# Makes the queue of examples/inbox-demo.sh in DIR (a real worker, two at once, until an item
# has failed, one has crashed into a retry, one waits for review with its change and two hang
# in their runs), starts `wrighty serve` on a free port, and with SCREENSHOTS-DIR given has a
# headless Chromium (Debian's, driven by Playwright: pip install -e '.[test]') save there, at
# 1440x900 and at a phone's 390x844:
#   web-board.png, web-board-phone.png    the board
#   web-review.png, web-review-phone.png  the item in review: its checks and its change, with
#                                         the action bar at the foot of the screen
#   web-item.png                          the failed item's page, its log read to its end
#   web-since-phone.png                   "Since you last looked"
# then stops the console and the worker. Without it, it leaves both running and prints the
# console's URL.
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
stop() {  # the console and the worker, whether the screenshots were saved or not
    kill -INT "$console" "$worker" 2>/dev/null || true
    wait "$console" || true
    while kill -0 "$worker" 2>/dev/null; do sleep 0.1; done  # inbox-demo.sh's child, not ours
}
trap stop EXIT
first() { wrighty list --state "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])'; }
failed=$(first needs-attention)
review=$(first review)
mkdir -p "$shots"
python3 - "$url" "$failed" "$review" "$shots" <<'PY'
import sys
from urllib.parse import parse_qs, urlsplit

from playwright.sync_api import Page, sync_playwright

url, failed, review, shots = sys.argv[1:]
base = url.split("?", 1)[0]
token = parse_qs(urlsplit(url).query)["token"][0]
DESKTOP = {"viewport": {"width": 1440, "height": 900}}
PHONE = {
    "viewport": {"width": 390, "height": 844},
    "device_scale_factor": 2,
    "is_mobile": True,
    "has_touch": True,
}


def shoot(page: Page, name: str) -> None:
    if token in page.content():
        raise SystemExit(f"the console's token is on the page saved as {name}")
    page.screenshot(path=f"{shots}/{name}", full_page=False)


def scroll_to(page: Page, selector: str) -> None:
    """Scroll the page so that this part of it is at the top of the screen."""
    page.locator(selector).evaluate("(part) => window.scrollTo(0, part.offsetTop - 8)")
    page.wait_for_function("() => window.scrollY > 0")


with sync_playwright() as playwright:
    browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
    desktop = browser.new_context(**DESKTOP).new_page()
    desktop.goto(url)  # the token becomes a cookie
    desktop.locator("#board table").first.wait_for()
    shoot(desktop, "web-board.png")
    desktop.goto(f"{base}items/{review}")
    desktop.locator(".action-bar").wait_for()
    shoot(desktop, "web-review.png")
    desktop.goto(f"{base}items/{failed}")
    desktop.locator('#log[data-state="ended"]').wait_for()
    shoot(desktop, "web-item.png")

    phone = browser.new_context(**PHONE).new_page()
    phone.goto(url)
    phone.locator("#board table").first.wait_for()
    scroll_to(phone, "#board")  # past the filters, to the cards
    shoot(phone, "web-board-phone.png")
    phone.goto(f"{base}items/{review}")
    phone.locator(".action-bar").wait_for()
    scroll_to(phone, "#checks")  # its checks, then its change
    shoot(phone, "web-review-phone.png")
    phone.goto(f"{base}since")
    phone.locator("#since-summary").wait_for()
    shoot(phone, "web-since-phone.png")
    browser.close()
PY
stop
trap - EXIT
echo "saved in $shots: web-board.png web-board-phone.png web-review.png web-review-phone.png web-item.png web-since-phone.png"
