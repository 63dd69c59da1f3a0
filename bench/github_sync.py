"""The cost of syncing a GitHub source (issue 44): `wrighty sources sync` of N open, labelled
issues against the local GitHub API of the tests (tests/github/fake_api.py, which answers as
GitHub does: pages of 100 with Link headers, an ETag per page, 304 to a matching If-None-Match
without spending the rate limit).

In a scratch project (SQLite, or the PostgreSQL store ``--store`` names), it runs the real
`wrighty sources sync --json` three times: the first sync (every issue created), a second with
nothing changed, and a third after one issue was edited. For each it prints the requests made
(those of the issues' pages, and those of talking on the issues: each item's status comment
posted or edited, the repository's new comments read), how many were answered 304, the core
rate limit spent, the items created and updated, and the command's wall time.

Then (unless ``--pickups 0``) a real `wrighty worker start` with `sources.pollSeconds`
``--poll``: an issue is labelled (added) at a random moment, ``--pickups`` times, and the time
until the worker says `source-synced` for it is measured: p50, p90 and max, against the poll.

Usage: python bench/github_sync.py [--issues 1000] [--store URL] [--pickups 20] [--poll 2]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.github.fake_api import RATE_LIMIT, TOKEN, FakeGitHub, serving
from tests.integration.worker_process import LiveWorker, ProjectOnDisk, make_project

REPO = "acme/widgets"


def sync(project: ProjectOnDisk) -> tuple[dict[str, object], float]:
    started = time.perf_counter()
    done = subprocess.run(
        project.command("sources", "sync", "--json"), cwd=project.root, env=project.env,
        capture_output=True, text=True, timeout=600, check=True,
    )  # fmt: skip
    return json.loads(done.stdout)["sources"][0], time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--issues", type=int, default=1000)
    parser.add_argument("--store", default=None, help="a PostgreSQL URL (default: SQLite)")
    parser.add_argument("--pickups", type=int, default=20)
    parser.add_argument("--poll", type=float, default=2.0)
    args = parser.parse_args()
    fake = FakeGitHub()
    for number in range(1, args.issues + 1):
        fake.add_issue(REPO, number, f"Issue {number}", f"The task of issue {number}.")
    with serving(fake) as url, tempfile.TemporaryDirectory() as scratch:
        tracker = {"kind": "github", "repo": REPO, "labels": ["wrighty"], "apiUrl": url}
        project = make_project(
            Path(scratch) / "project", store_url=args.store, env={"GITHUB_TOKEN": TOKEN},
            sources={"trackers": [tracker]},
        )  # fmt: skip
        print(f"{args.issues} open issues with the label; pages of 100")
        print(f"{'sync':<22} {'requests':>8} {'issues':>7} {'talk':>5} {'304':>5} "
              f"{'rate spent':>10} {'created':>8} {'updated':>8} {'seconds':>8}")  # fmt: skip
        for name in ("first", "second", "nothing changed", "one issue edited"):
            if name == "one issue edited":
                fake.edit_issue(REPO, 1, body="Edited.")
            before_requests, before_rate = fake.counted(), fake.remaining
            report, seconds = sync(project)
            requests = fake.counted() - before_requests
            made = fake.requests[before_requests:]
            not_modified = sum(1 for r in made if r.status == 304)
            issues = sum(1 for r in made if r.path == f"/repos/{REPO}/issues")
            print(
                f"{name:<22} {requests:>8} {issues:>7} {requests - issues:>5} {not_modified:>5} "
                f"{before_rate - fake.remaining:>10} {len(report['created']):>8} "
                f"{len(report['updated']):>8} {seconds:>8.2f}"  # type: ignore[arg-type]
            )
        print(f"rate limit left: {fake.remaining} of {RATE_LIMIT}")
        if args.pickups:
            pickups(fake, project, args.pickups, args.poll)


def pickups(fake: FakeGitHub, project: ProjectOnDisk, count: int, poll: float) -> None:
    """Seconds from an issue's label to its item, as a worker with ``poll`` syncs."""
    document = json.loads(project.config.read_text())
    document["sources"]["pollSeconds"] = poll
    project.config.write_text(json.dumps(document))
    worker = LiveWorker(project)
    waits = []
    try:
        worker.until("started")
        for number in range(100_001, 100_001 + count):
            time.sleep(random.uniform(0, poll))
            labelled = time.monotonic()
            fake.add_issue(REPO, number, f"New issue {number}", "Print hello.")
            worker.until("source-synced", created=1)
            waits.append(time.monotonic() - labelled)
    finally:
        worker.process.terminate()
        worker.finish()
    waits.sort()
    p50, p90 = statistics.median(waits), waits[int(0.9 * (len(waits) - 1))]
    print(f"new labelled issue -> item, pollSeconds {poll:g}, {count} issues: p50 {p50:.2f} s, "
          f"p90 {p90:.2f} s, max {waits[-1]:.2f} s")  # fmt: skip


if __name__ == "__main__":
    main()
