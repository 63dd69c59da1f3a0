"""The bad-input corpus: every way of holding wrighty wrong that we know of, each run as a
command of its own in a scratch project.

Each case must get exit code 2 and exactly one line on stderr that starts with `wrighty:` and
says what is wrong; no traceback; no raw control character on stdout or stderr; no planted
secret echoed; and the project's files (wrighty.json, the store with its -wal and -shm, all of
.wrighty/) byte for byte as they were. A new option or config key adds its cases here.

Every case runs through the fork server (tests/docs/zygote.py): a process of its own, started
by the executable's entry point with its own argv, folder, environment and standard streams,
but without the half second of interpreter start-up and imports each. A sample of the cases
(every SAMPLE_EVERY-th, and every case that sets a variable) runs on the installed executable
itself as well, with the same checks.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import fork_server, run_installed, snapshot

SECRET = "Hunter2Secret"  # planted in URLs and config values; must never be echoed
API_KEY = "sk-ant-api03-" + "Zq9Wx8Ev7Rt6" * 4
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")

Setup = Callable[[Path], None]


@dataclass(frozen=True)
class Case:
    name: str
    args: tuple[str | bytes, ...]
    says: str  # a fragment of the one stderr line
    setup: Setup | None = None
    stdin: bytes = b""
    stdout_allowed: bool = False  # config validate lists the problems on stdout
    env: tuple[str, ...] = ()  # NAME=value, set for the command (through env(1))
    stdin_closed: bool = False  # started with standard input closed, as `<&-` does


# The `wrighty` a case's setup runs: the one the case itself runs (None: the executable).
SETUP_COMMAND: ContextVar[str | None] = ContextVar("SETUP_COMMAND", default=None)


def run(
    project: Path,
    args: tuple[str | bytes, ...],
    *,
    stdin: bytes = b"",
    env: tuple[str, ...] = (),
    command: str | None = None,
    stdin_closed: bool = False,
):
    prefix: tuple[str, ...] = ("env", *env) if env else ()
    if stdin_closed:  # the shell closes it, then runs the command in its place
        prefix = ("sh", "-c", 'exec "$@" <&-', "sh", *prefix)
    return run_installed(project, *args, stdin=stdin, text=False, prefix=prefix, command=command)


# Inside a run: what the worker gives the agent (docs/worker.md#the-agents-environment).
IN_RUN = ("WRIGHTY_RUN_ID=r-0123456789ab", "WRIGHTY_CLAIM_TOKEN=token")
NO_STORE = "WRIGHTY_RUN_STORE=sqlite:////nonexistent/wrighty.db"  # read, never reached


def in_run(name: str, args: tuple[str, ...], says: str, *variables: str) -> Case:
    return Case(name, args, says, env=(*IN_RUN, *variables))


# -- setups -------------------------------------------------------------------------------------


def config(text: str | bytes) -> Setup:
    def write(project: Path) -> None:
        path = project / "wrighty.json"
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text)

    return write


def config_json(document: object) -> Setup:
    return config(json.dumps(document))


def usage_failure(policy: object) -> Setup:
    return config_json({"worker": {"usageFailure": policy}})


def budgets(section: object) -> Setup:
    return config_json({"budgets": section})


def pricing(section: object) -> Setup:
    return config_json({"pricing": section})


def notify(section: object) -> Setup:
    return config_json({"notify": section})


def sources(*trackers: dict[str, object], **more: object) -> Setup:
    """wrighty.json's sources section with these trackers (docs/sources.md)."""
    return config_json({"sources": {"trackers": list(trackers), **more}})


def github(**settings: object) -> dict[str, object]:
    """A GitHub source of the sources section, with ``settings`` over a valid one's."""
    return {"kind": "github", "repo": "acme/widgets", "labels": ["wrighty"], **settings}


def verify(section: object, **more: object) -> Setup:
    return config_json({"verify": section, **more})


def check(name: str, *argv: str, **more: object) -> dict[str, object]:
    """One check of wrighty.json's verify section."""
    return {"name": name, "argv": list(argv or ("true",)), **more}


def checks(prefix: str, count: int) -> list[dict[str, object]]:
    return [check(f"{prefix}{n}") for n in range(count)]


def agent_verify(section: object, **project: object) -> Setup:
    """A command agent `demo`, the default, with a verify section of its own."""
    return config_json(
        {"worker": {"defaultAgent": "demo"}, **project,
         "agents": {"demo": {"adapter": "command", "command": ["true"], "verify": section}}}
    )  # fmt: skip


def completion(section: object, **worker: object) -> Setup:
    """A command agent `demo`, the default, with wrighty.json's completion ``section``."""
    return config_json(
        {"worker": {"defaultAgent": "demo", **worker}, "completion": section,
         "agents": {"demo": {"adapter": "command", "command": ["true"]}}}
    )  # fmt: skip


def git_init(project: Path) -> None:
    """A git repository in the project, with no commit."""
    subprocess.run(["git", "init", "-q", str(project)], check=True)


def create_with(*options: str) -> tuple[str, ...]:
    return ("create", "--title", "t", "--body", "b", *options)


def file(name: str, content: bytes) -> Setup:
    return lambda project: (project / name).write_bytes(content)


def folder(name: str) -> Setup:
    return lambda project: (project / name).mkdir()


def link(name: str, target: str) -> Setup:
    return lambda project: (project / name).symlink_to(target)


def fifo(name: str) -> Setup:
    """A named pipe nobody writes to: a read of it would wait forever."""
    return lambda project: os.mkfifo(project / name)


def item(*extra: str) -> Setup:
    """One item, made with the executable as a user would."""

    def create(project: Path) -> None:
        made = run(
            project, ("create", "--title", "t", "--body", "b", *extra), command=SETUP_COMMAND.get()
        )
        assert made.returncode == 0, made.stderr

    return create


def _cancel(project: Path, item_id: int) -> None:
    cancelled = run(project, ("cancel", str(item_id)), command=SETUP_COMMAND.get())
    assert cancelled.returncode == 0, cancelled.stderr


def empty_store(project: Path) -> None:
    (project / ".wrighty" / "wrighty.db").write_bytes(b"")


def newer_store(project: Path) -> None:
    connection = sqlite3.connect(project / ".wrighty" / "wrighty.db")
    connection.execute(
        "INSERT INTO wrighty_migrations (version, name, applied_at) VALUES (999, 'future', 'x')"
    )
    connection.commit()
    connection.close()


def foreign_database(project: Path) -> None:
    connection = sqlite3.connect(project / "other.db")
    connection.execute("CREATE TABLE notes (text)")
    connection.commit()
    connection.close()


def table_less_database(project: Path) -> None:
    connection = sqlite3.connect(project / "e.db")
    connection.execute("PRAGMA user_version = 1")
    connection.close()


def stored(statement: str) -> Setup:
    """One item, then ``statement`` run on the store past wrighty and its CHECK constraints,
    as a hand edit or another wrighty could leave it (docs/storage.md)."""

    def poison(project: Path) -> None:
        item()(project)
        connection = sqlite3.connect(project / ".wrighty" / "wrighty.db")
        connection.execute("PRAGMA ignore_check_constraints = ON")
        connection.execute(statement)
        connection.commit()
        connection.close()

    return poison


# One item, in review (as a worker with completion.review person leaves it).
REVIEWED = stored("UPDATE items SET state = 'review' WHERE id = 1")


def _second_after_the_first_in_review(project: Path) -> None:
    item()(project)
    item("--after", "1")(project)
    connection = sqlite3.connect(project / ".wrighty" / "wrighty.db")
    connection.execute("UPDATE items SET state = 'review' WHERE id = 2")
    connection.commit()
    connection.close()


# Item 2 in review comes after item 1, which is todo: not ready for accept --all.
AFTER_A_TODO = _second_after_the_first_in_review


def no_config(project: Path) -> None:
    (project / "wrighty.json").unlink()


def command_agent(*command: str) -> Setup:
    return config_json(
        {"worker": {"defaultAgent": "demo"},
         "agents": {"demo": {"adapter": "command", "command": list(command)}}}
    )  # fmt: skip


DEMO: dict[str, Any] = {"agents": {"demo": {"adapter": "command", "command": ["true"]}}}
MISSING_BWRAP = {"kind": "bubblewrap", "program": "no-such-bwrap"}
FAILING_BWRAP = {"kind": "bubblewrap", "program": "/bin/false"}


def with_setups(*setups: Setup) -> Setup:
    def run_all(project: Path) -> None:
        for setup in setups:
            setup(project)

    return run_all


VERIFY_CONFIG = config_json({"verify": {"checks": [{"name": "tests", "argv": ["true"]}]}})


def not_executable(project: Path) -> None:
    (project / "agent.sh").write_text("#!/bin/sh\nexit 0\n")
    (project / "agent.sh").chmod(0o644)


def _huge_private_file(path: Path, size: int) -> None:
    with path.open("wb") as out:
        out.truncate(size)
    path.chmod(0o600)


def _private_file(path: Path, text: str, mode: int) -> None:
    path.write_text(text + "\n")
    path.chmod(mode)


CASES: list[Case] = [
    # the command line itself
    Case("unknown-option", ("--bogus",), "No such option: --bogus"),
    Case("unknown-command", ("nosuch",), "No such command 'nosuch'"),
    Case("id-not-a-number", ("show", "abc"), "'abc' is not a whole number"),
    Case("id-zero", ("show", "0"), "greater than or equal to 1"),
    Case("id-past-the-store-range", ("show", "9223372036854775808"), "9223372036854775807"),
    Case("id-far-past-the-range", ("cancel", "9" * 40), "9223372036854775807"),
    Case("option-without-its-value", ("list", "--state"), "requires an argument"),
    Case("unknown-item-show", ("show", "99"), "no item 99"),
    Case("unknown-item-queue", ("queue", "99"), "no item 99"),
    Case("unknown-item-cancel", ("cancel", "99"), "no item 99"),
    Case("unknown-item-requeue", ("requeue", "99", "--fresh"), "no item 99"),
    Case("unknown-item-release", ("release", "99", "--force"), "no item 99"),
    Case("unknown-item-logs", ("logs", "99"), "no item 99"),
    Case(
        "unknown-item-worker",
        ("worker", "start", "--item", "99"),
        "no item 99",
        setup=command_agent("true"),
    ),
    # create
    Case("create-without-title", ("create", "--body", "b"), "Missing option '--title'"),
    Case("empty-title", ("create", "--title", "", "--body", "b"), "title is empty"),
    Case("empty-task", ("create", "--title", "t", "--body", "  "), "the task is empty"),
    Case("title-too-long", ("create", "--title", "x" * 201, "--body", "b"), "the limit is 200"),
    Case("title-of-two-lines", ("create", "--title", "a\nb", "--body", "b"), "one line"),
    Case(
        "title-with-osc52",
        ("create", "--title", "\x1b]52;c;ZWNobyBwd25lZA==\x07 clip", "--body", "b"),
        "control character",
    ),
    Case("title-with-del", ("create", "--title", "a\x7fb", "--body", "b"), "control character"),
    Case("title-with-bidi", ("create", "--title", "a\u202eb", "--body", "b"), "U+202E"),
    Case("title-not-utf8", ("create", "--title", b"caf\xe9", "--body", "b"), "not valid UTF-8"),
    Case("task-not-utf8", ("create", "--title", "t", "--body", b"caf\xe9"), "not valid UTF-8"),
    Case(
        "body-file-missing",
        ("create", "--title", "t", "--body-file", "missing.md"),
        "--body-file missing.md: no such file",
    ),
    Case(
        "body-and-body-file",
        ("create", "--title", "t", "--body", "b", "--body-file", "x.md"),
        "--body or --body-file",
    ),
    Case(
        "body-file-dev-zero",
        ("create", "--title", "t", "--body-file", "/dev/zero"),
        "--body-file /dev/zero: is a character device, not a regular file",
    ),
    Case(
        "body-file-a-fifo",
        ("create", "--title", "t", "--body-file", "task.md"),
        "--body-file task.md: is a FIFO (named pipe), not a regular file",
        setup=fifo("task.md"),
    ),
    Case(
        "body-file-latin1",
        ("create", "--title", "t", "--body-file", "task.md"),
        "not UTF-8 text (byte 0xe9",
        setup=file("task.md", b"caf\xe9 au lait"),
    ),
    Case(
        "body-file-a-folder",
        ("create", "--title", "t", "--body-file", "notes"),
        "--body-file notes: is a directory, not a regular file",
        setup=folder("notes"),
    ),
    # wrighty import
    Case("import-missing-file", ("import", "nowhere.md"), "nowhere.md: No such file or directory"),
    Case(
        "import-a-folder",
        ("import", "notes"),
        "notes: is a directory, not a regular file",
        setup=folder("notes"),
    ),
    Case(
        "import-a-fifo",
        ("import", "tasks.md"),
        "tasks.md: is a FIFO (named pipe), not a regular file",
        setup=fifo("tasks.md"),
    ),
    Case(
        "import-dev-zero",
        ("import", "/dev/zero"),
        "/dev/zero: is a character device, not a regular file",
    ),
    Case(
        "import-latin1",
        ("import", "tasks.md"),
        "tasks.md: is not UTF-8 text (byte 0xe9",
        setup=file("tasks.md", b"## Caf\xe9\n\ntext\n"),
    ),
    Case(
        "import-no-heading",
        ("import", "tasks.md"),
        "tasks.md: line 1: no `## Title` heading",
        setup=file("tasks.md", b"just text\n"),
    ),
    Case(
        "import-bad-priority",
        ("import", "tasks.md", "--queue"),
        "tasks.md: line 3: priority 'P9': use 0 to 3",
        setup=file("tasks.md", b"## A\n```wrighty\npriority: P9\n```\ntext\n"),
    ),
    Case(
        "import-unknown-agent",
        ("import", "tasks.md"),
        "tasks.md: line 1 ('A'): unknown agent 'nosuch'",
        setup=file("tasks.md", b"## A\n```wrighty\nagent: nosuch\n```\ntext\n"),
    ),
    Case(
        "import-unknown-item",
        ("import", "tasks.md"),
        "tasks.md: line 1 ('A'): after #999: no such item",
        setup=file("tasks.md", b"## A\n```wrighty\nafter: #999\n```\ntext\n"),
    ),
    *(
        Case(f"verify-option-{name}", args, says, setup=with_setups(VERIFY_CONFIG, *setups))
        for name, args, says, setups in (
            (
                "create-unknown",
                create_with("--verify", "nope"),
                "--verify nope: the default agent has no check of that name (its checks: tests)",
                (),
            ),
            (
                "create-and-none",
                create_with("--verify", "tests", "--no-verify"),
                "give --verify CHECK or --no-verify, not both",
                (),
            ),
            (
                "create-control",
                create_with("--verify", "a\x1b[2Jb"),
                "--verify a\\x1b[2Jb: the default agent has no check of that name",
                (),
            ),
            (
                "edit-unknown",
                ("edit", "1", "--verify", "nope"),
                "--verify nope: the default",
                (item(),),
            ),
            (
                "edit-default-and-none",
                ("edit", "1", "--verify-default", "--no-verify"),
                "give --verify-default alone",
                (item(),),
            ),
            (
                "edit-same",
                ("edit", "1", "--no-verify"),
                "already is as asked",
                (item("--no-verify"),),
            ),
            (
                "import-unknown",
                ("import", "tasks.md"),
                "line 1 ('A'): verify nope: the default",
                (file("tasks.md", b"## A\n```wrighty\nverify: nope\n```\ntext\n"),),
            ),
            (
                "import-bad-name",
                ("import", "tasks.md"),
                "line 3: verify 'a b': give check names of wrighty.json, comma-separated, or none",
                (file("tasks.md", b"## A\n```wrighty\nverify: a b\n```\ntext\n"),),
            ),
            (
                "import-empty-list",
                ("import", "tasks.md"),
                "line 3: verify ',': give check names",
                (file("tasks.md", b"## A\n```wrighty\nverify: ,\n```\ntext\n"),),
            ),
        )
    ),
    *(
        Case(f"diff-{name}", args, says, setup=with_setups(*setups))
        for name, args, says, setups in (
            ("unknown-item", ("diff", "7"), "item 7 does not exist", ()),
            ("not-run", ("diff", "1"), "item 1 has no workspace yet: it has not run", (item(),)),
            ("stat-not-run", ("diff", "1", "--stat"), "item 1 has no workspace yet", (item(),)),
            ("zero", ("diff", "0"), "greater than or equal to 1", ()),
            ("not-a-number", ("diff", "x\x1b[2J"), "x\\x1b[2J", ()),
        )
    ),
    # wrighty.json's completion section and a worktree worker's base (docs/work-product.md)
    *(
        Case(f"completion-{name}", args, says, setup=setup)
        for name, args, says, setup in (
            (
                "prefix-with-dots",
                ("list",),
                "completion.branchPrefix: must not hold '..' or '//' (git refuses such branch "
                'names) (got the string "a..b/")',
                completion({"branchPrefix": "a..b/"}),
            ),
            (
                "prefix-with-a-dash-first",
                ("list",),
                "completion.branchPrefix: must start with a letter or digit",
                completion({"branchPrefix": "-x/"}),
            ),
            (
                "prefix-with-a-lock-part",
                ("worker", "start", "--once"),
                "completion.branchPrefix: must not have a part that starts with '.' or ends "
                "with '.lock'",
                completion({"branchPrefix": "a.lock/"}),
            ),
            (
                "prefix-with-control",
                ("list",),
                "completion.branchPrefix: must start with a letter or digit and hold only "
                "letters, digits",
                completion({"branchPrefix": "a\x1b[2J/"}),
            ),
            (
                "base-an-option",
                ("list",),
                "completion.base: must name a git ref or commit",
                completion({"base": "--output=x"}),
            ),
            (
                "commit-unknown",
                ("list",),
                "completion.commit: must be 'wrighty', 'agent' or 'none' (got the string \"me\")",
                completion({"commit": "me"}),
            ),
            (
                "author-newline",
                ("list",),
                "completion.author.name: holds a newline or another control character",
                completion({"author": {"name": "a\nb", "email": "a@b.invalid"}}),
            ),
            (
                "author-no-email",
                ("list",),
                "completion.author.email: is required",
                completion({"author": {"name": "a"}}),
            ),
            (
                "hooks-unknown",
                ("list",),
                "completion.hooks: must be 'run' or 'skip' (got the string \"yes\")",
                completion({"hooks": "yes"}),
            ),
            (
                "hooks-not-a-string",
                ("worker", "start", "--once"),
                "completion.hooks: must be 'run' or 'skip' (got true)",
                completion({"hooks": True}),
            ),
            (
                "hooks-with-control",
                ("list",),
                "completion.hooks: must be 'run' or 'skip' (got the string \"run\\u001b[2J\")",
                completion({"hooks": "run\x1b[2J"}),
            ),
            (
                "integrate-unknown",
                ("list",),
                "completion.integrate: must be 'none', 'merge', 'push', 'command' or 'github-pr' "
                '(got the string "pull")',
                completion({"integrate": "pull"}),
            ),
            (
                "integrate-not-a-string",
                ("list",),
                "completion.integrate: must be 'none', 'merge', 'push', 'command' or 'github-pr' "
                "(got true)",
                completion({"integrate": True}),
            ),
            (
                "merge-unknown",
                ("list",),
                "completion.merge: must be 'ff', 'ff-only' or 'no-ff' (got the string \"squash\")",
                completion({"merge": "squash"}),
            ),
            (
                "stack-not-a-boolean",
                ("worker", "start", "--once"),
                'completion.stack: must be a valid boolean (got the string "yes")',
                completion({"stack": "yes"}),
            ),
            (
                "remote-an-option",
                ("list",),
                "completion.remote: must be a git remote's name: 1 to 100 letters, digits, '.', "
                "'_', '-' and '/', not starting with '-' (got a string)",
                completion({"remote": "--receive-pack=x"}),
            ),
            (
                "remote-with-control",
                ("list",),
                "completion.remote: must be a git remote's name",
                completion({"remote": "origin\x1b[2J"}),
            ),
            *(
                (
                    f"{key}-wrong-type-{n}",
                    ("list",),
                    f"completion.{key}: {says}",
                    completion({key: value}),
                )
                for n, (key, value, says) in enumerate(
                    (
                        (
                            "update",
                            "squash",
                            "must be 'merge' or 'rebase' (got the string \"squash\")",
                        ),
                        ("update", True, "must be 'merge' or 'rebase' (got true)"),
                        ("squash", "yes", 'must be a valid boolean (got the string "yes")'),
                        ("stack", 1, "must be a valid boolean (got 1)"),
                        ("reviewAfterFix", "robot", "must be 'person' or 'auto'"),
                    )
                )
            ),
            (
                "remote-a-url",
                ("list",),
                "completion.remote: must be a git remote's name",
                completion({"remote": f"https://x:{SECRET}@e.co"}),  # short: echoed if not kept
            ),
            (
                "remote-empty",
                ("list",),
                "completion.remote: must be a git remote's name",
                completion({"remote": ""}),
            ),
            (
                "remote-too-long",
                ("list",),
                "completion.remote: must be a git remote's name: 1 to 100",
                completion({"remote": "r" * 101}),
            ),
            (
                "integrate-command-missing",
                ("worker", "start", "--once"),
                'completion.integrateCommand: is required when completion.integrate is "command"',
                completion({"integrate": "command"}),
            ),
            (
                "integrate-command-empty",
                ("list",),
                "completion.integrateCommand: is empty: name the program to run, as in "
                '["gh", "pr", "create"]',
                completion({"integrate": "command", "integrateCommand": []}),
            ),
            (
                "integrate-command-empty-program",
                ("list",),
                "completion.integrateCommand.0: is empty: name the program to run",
                completion({"integrate": "command", "integrateCommand": ["", "pr"]}),
            ),
            (
                "integrate-command-nul",
                ("list",),
                "completion.integrateCommand.2: holds a NUL byte",
                completion({"integrateCommand": ["gh", "pr", f"--token\x00{SECRET}"]}),
            ),
            (
                "integrate-command-a-string",
                ("list",),
                "completion.integrateCommand: must be a valid list (got a string)",
                completion(
                    {"integrateCommand": f"gh --token {SECRET}"}
                ),  # short: echoed if not kept
            ),
            (
                "integrate-command-not-strings",
                ("list",),
                "completion.integrateCommand.1: must be a valid string (got 7)",
                completion({"integrateCommand": ["gh", 7]}),
            ),
            (
                "integrate-command-too-many",
                ("list",),
                "completion.integrateCommand: has 65 arguments: at most 64",
                completion({"integrateCommand": ["gh", *[SECRET] * 64]}),
            ),
            (
                "integrate-command-argument-too-long",
                ("list",),
                "completion.integrateCommand.1: String should have at most 4000 characters "
                "(got a string)",
                completion({"integrateCommand": ["gh", SECRET * 400]}),
            ),
            (
                "integrate-timeout-too-short",
                ("list",),
                "completion.integrateTimeoutSeconds: must be >= 1 (got 0.5)",
                completion({"integrateTimeoutSeconds": 0.5}),
            ),
            (
                "integrate-timeout-too-long",
                ("list",),
                "completion.integrateTimeoutSeconds: must be <= 3600 (got 86400)",
                completion({"integrateTimeoutSeconds": 86400}),
            ),
            (
                "integrate-timeout-a-string",
                ("list",),
                "completion.integrateTimeoutSeconds: must be a valid number",
                completion({"integrateTimeoutSeconds": "300"}),
            ),
            (
                "worktree-without-a-commit",
                ("worker", "start", "--once"),
                "has no commit yet; commit once (worktrees start from HEAD), or set "
                "completion.base in wrighty.json",
                with_setups(completion({}, workspaceMode="worktree"), git_init),
            ),
            (
                "worktree-base-names-nothing",
                ("worker", "start", "--once"),
                "completion.base 'release' names no commit in the git repository",
                with_setups(completion({"base": "release"}, workspaceMode="worktree"), git_init),
            ),
            (
                "worktree-not-a-repository",
                ("worker", "start", "--once"),
                "is not in a git repository; run `git init` there and commit",
                completion({}, workspaceMode="worktree"),
            ),
        )
    ),
    # review's accept and reject (docs/work-product.md#review), and their completion keys
    *(
        Case(f"review-{name}", args, says, setup=setup, stdin=stdin)
        for name, args, says, setup, stdin in (
            ("accept-unknown-item", ("accept", "7"), "no item 7; `wrighty list` shows", None, b""),
            (
                "accept-not-in-review",
                ("accept", "1"),
                "item 1 is todo; accept takes items in review",
                item(),
                b"",
            ),
            ("accept-zero", ("accept", "0"), "Invalid value for 'ID'", None, b""),
            (
                "accept-wait-negative",
                ("accept", "1", "--wait", "-1"),
                "Invalid value for '--wait'",
                REVIEWED,
                b"",
            ),
            (
                "accept-all-none-in-review",
                ("accept", "--all"),
                "nothing to accept: no item is in review",
                item(),
                b"",
            ),
            (
                "accept-all-dry-run-none-ready",
                ("accept", "--all", "--dry-run"),
                "nothing to accept: none of the 1 item in review is ready",
                AFTER_A_TODO,
                b"",
            ),
            (
                "accept-all-none-ready",
                ("accept", "--all", "--wait", "0"),
                "it comes after is done, landing or ready",
                AFTER_A_TODO,
                b"",
            ),
            (
                "accept-all-and-ids",
                ("accept", "1", "--all"),
                "give the ids of the items to accept, or --all (not both)",
                REVIEWED,
                b"",
            ),
            (
                "accept-no-id",
                ("accept",),
                "give the ids of the items to accept, or --all",
                REVIEWED,
                b"",
            ),
            (
                "accept-dry-run-without-all",
                ("accept", "1", "--dry-run"),
                "--dry-run lists what --all would accept: give --all",
                REVIEWED,
                b"",
            ),
            (
                "accept-several-one-not-in-review",
                ("accept", "2", "1"),
                "item 1 is todo; accept takes items in review",
                AFTER_A_TODO,
                b"",
            ),
            ("land-zero", ("land", "0"), "Invalid value for '[ID]'", None, b""),
            (
                "accept-done",
                ("accept", "1"),
                "item 1 is done; accept takes items in review",
                stored("UPDATE items SET state = 'done' WHERE id = 1"),
                b"",
            ),
            (
                "reject-unknown-item",
                ("reject", "7", "--feedback", "x"),
                "no item 7; `wrighty list` shows",
                None,
                b"",
            ),
            (
                "reject-not-in-review",
                ("reject", "1", "--feedback", "x"),
                "item 1 is todo; reject takes items in review",
                item(),
                b"",
            ),
            (
                "reject-no-feedback",
                ("reject", "1"),
                "give the feedback once: --feedback TEXT or --feedback-file PATH",
                REVIEWED,
                b"",
            ),
            (
                "reject-feedback-twice",
                ("reject", "1", "--feedback", "x", "--feedback-file", "f.txt"),
                "give the feedback once",
                with_setups(REVIEWED, file("f.txt", b"y")),
                b"",
            ),
            (
                "reject-feedback-empty",
                ("reject", "1", "--feedback", " \n "),
                "the feedback is empty: say what the agent is to change",
                REVIEWED,
                b"",
            ),
            (
                "reject-feedback-too-large",
                ("reject", "1", "--feedback", "x" * 65537),
                "the feedback is larger than 64 KiB",
                REVIEWED,
                b"",
            ),
            (
                "reject-feedback-file-missing",
                ("reject", "1", "--feedback-file", "none.txt"),
                "--feedback-file none.txt: no such file",
                REVIEWED,
                b"",
            ),
            (
                "reject-feedback-file-folder",
                ("reject", "1", "--feedback-file", "d"),
                "--feedback-file d: is a directory, not a regular file",
                with_setups(REVIEWED, folder("d")),
                b"",
            ),
            (
                "reject-feedback-file-fifo",
                ("reject", "1", "--feedback-file", "pipe"),
                "--feedback-file pipe: is a FIFO",
                with_setups(REVIEWED, fifo("pipe")),
                b"",
            ),
            (
                "reject-feedback-file-too-large",
                ("reject", "1", "--feedback-file", "big.txt"),
                "--feedback-file big.txt: is larger than 64 KiB",
                with_setups(REVIEWED, file("big.txt", b"x" * 65537)),
                b"",
            ),
            (
                "reject-feedback-file-not-utf8",
                ("reject", "1", "--feedback-file", "l1.txt"),
                "--feedback-file l1.txt: is not UTF-8",
                with_setups(REVIEWED, file("l1.txt", b"caf\xe9")),
                b"",
            ),
            (
                "reject-feedback-file-empty",
                ("reject", "1", "--feedback-file", "e.txt"),
                "the feedback is empty",
                with_setups(REVIEWED, file("e.txt", b"\n")),
                b"",
            ),
            (
                "reject-feedback-stdin-too-large",
                ("reject", "1", "--feedback-file", "-"),
                "the feedback on standard input is larger than 64 KiB",
                REVIEWED,
                b"x" * 65537,
            ),
            ("handoff-without-to", ("handoff", "1"), "Missing option '--to'", REVIEWED, b""),
            (
                "handoff-unknown-agent",
                ("handoff", "1", "--to", "robot"),
                "--to robot: unknown agent (configured: claude, codex, gemini); see ",
                REVIEWED,
                b"",
            ),
            (
                "handoff-agent-not-configured",
                ("handoff", "1", "--to", "command"),
                "--to command: not configured: agent 'command' uses the command adapter but "
                "has no command; set agents.command.command in wrighty.json, e.g. "
                '["python3", "agent.py"] (configured: claude, codex, gemini)',
                REVIEWED,
                b"",
            ),
            (
                "handoff-same-agent",
                ("handoff", "1", "--to", "claude"),
                "item 1's agent is claude already",
                REVIEWED,
                b"",
            ),
            (
                "handoff-not-waiting",
                ("handoff", "1", "--to", "codex"),
                "item 1 is todo; handoff takes items that are needs-attention",
                item(),
                b"",
            ),
            (
                "handoff-unknown-item",
                ("handoff", "7", "--to", "codex"),
                "no item 7; `wrighty list` shows",
                None,
                b"",
            ),
            (
                "handoff-two-notes",
                ("handoff", "1", "--to", "codex", "--note", "a", "--note-file", "n.txt"),
                "give the note once",
                with_setups(REVIEWED, file("n.txt", b"b")),
                b"",
            ),
            (
                "handoff-note-empty",
                ("handoff", "1", "--to", "codex", "--note", " \n "),
                "the note is empty",
                REVIEWED,
                b"",
            ),
            (
                "handoff-note-file-too-large",
                ("handoff", "1", "--to", "codex", "--note-file", "big.txt"),
                "--note-file big.txt: is larger than 64 KiB",
                with_setups(REVIEWED, file("big.txt", b"x" * 65537)),
                b"",
            ),
            (
                "handoff-note-stdin-not-utf8",
                ("handoff", "1", "--to", "codex", "--note-file", "-"),
                "the note on standard input",
                REVIEWED,
                b"caf\xe9",
            ),
            (
                "reject-spent",
                ("reject", "1", "--feedback", "again"),
                "item 1 was rejected 5 times, completion.maxRejections in wrighty.json",
                stored("UPDATE items SET state = 'review', rejections = 5 WHERE id = 1"),
                b"",
            ),
            (
                "reject-stored-rejections-negative",
                ("reject", "1", "--feedback", "again"),
                "its rejections does not read",
                stored("UPDATE items SET state = 'review', rejections = -4 WHERE id = 1"),
                b"",
            ),
            (
                "completion-review-unknown",
                ("list",),
                "completion.review: must be 'auto' or 'person'",
                completion({"review": "maybe"}),
                b"",
            ),
            (
                "completion-max-rejections-zero",
                ("list",),
                "completion.maxRejections: must be >= 1 (got 0)",
                completion({"maxRejections": 0}),
                b"",
            ),
            (
                "completion-max-rejections-too-many",
                ("list",),
                "completion.maxRejections: must be <= 100 (got 101)",
                completion({"maxRejections": 101}),
                b"",
            ),
            (
                "completion-max-rejections-text",
                ("list",),
                'completion.maxRejections: must be a valid integer (got the string "3")',
                completion({"maxRejections": "3"}),
                b"",
            ),
            (
                "completion-max-rejections-fraction",
                ("list",),
                "completion.maxRejections: must be a valid integer (got 2.5)",
                completion({"maxRejections": 2.5}),
                b"",
            ),
        )
    ),
    *(
        Case(f"workspaces-{name}", ("workspaces", "clean", *args), says, setup=setup)
        for name, args, says, setup in (
            ("clean-nothing-named", (), "say which workspaces to remove: give item ids", None),
            ("clean-logs-alone", ("--logs",), "say which workspaces to remove", None),
            ("clean-dry-run-alone", ("--dry-run", "--force"), "say which workspaces", None),
            ("clean-unknown-item", ("99",), "item 99 does not exist", None),
            ("clean-unknown-among", ("99", "1", "--force"), "item 99 does not exist", item()),
            ("clean-never-ran", ("1",), "item 1 has no workspace on this installation", item()),
            ("clean-ids-and-filter", ("1", "--done"), "give item ids or filters", item()),
            ("clean-id-zero", ("0",), "Invalid value for 'ID'", None),
            ("clean-id-not-a-number", ("one",), "Invalid value for 'ID'", None),
            ("clean-id-too-large", ("9" * 30,), "Invalid value for 'ID'", None),
            (
                "older-than-no-unit",
                ("--older-than", "30"),
                "--older-than: cannot read duration",
                None,
            ),
            (
                "older-than-bad",
                ("--older-than", "soon"),
                "--older-than: cannot read duration",
                None,
            ),
            ("older-than-empty", ("--older-than", ""), "--older-than: empty duration", None),
            ("older-than-zero", ("--older-than", "0d"), "greater than zero", None),
            ("older-than-negative", ("--older-than", "-1d"), "cannot read duration", None),
            ("older-than-too-long", ("--older-than", "4000d"), "the limit is 3650d", None),
            ("older-than-control", ("--older-than", "1\x1b[2Jd"), "cannot read duration", None),
            ("older-than-missing", ("--done", "--older-than"), "requires an argument", None),
            ("unknown-option", ("--all",), "No such option: --all", None),
        )
    ),
    Case(
        "import-cycle",
        ("import", "tasks.md"),
        "wait for each other",
        setup=file(
            "tasks.md", b"## A\n```wrighty\nafter: b\n```\nx\n## B\n```wrighty\nafter: a\n```\ny\n"
        ),
    ),
    Case(
        "body-on-stdin-too-large",
        ("create", "--title", "t"),
        "larger than 1 MiB",
        stdin=b"x" * (1024 * 1024 + 1),
    ),
    Case(
        "body-on-closed-stdin",
        ("create", "--title", "t"),
        "no task given: pass --body TEXT, --body-file PATH, or pipe the task on stdin",
        stdin_closed=True,
    ),
    Case(
        "body-file-dash-on-closed-stdin",
        ("create", "--title", "t", "--body-file", "-"),
        "the task was to be read from standard input ('-'), but it is closed",
        stdin_closed=True,
    ),
    Case(
        "feedback-file-dash-on-closed-stdin",
        ("reject", "1", "--feedback-file", "-"),
        "the feedback was to be read from standard input ('-'), but it is closed",
        stdin_closed=True,
    ),
    Case(
        "note-file-dash-on-closed-stdin",
        ("handoff", "1", "--to", "codex", "--note-file", "-"),
        "the note was to be read from standard input ('-'), but it is closed",
        stdin_closed=True,
    ),
    Case(
        "body-on-stdin-not-utf8",
        ("create", "--title", "t", "--body-file", "-"),
        "not UTF-8 text",
        stdin=b"\xff\xfe task",
    ),
    Case(
        "body-file-too-large",
        ("create", "--title", "t", "--body-file", "big.md"),
        "--body-file big.md: is larger than 1 MiB",
        setup=file("big.md", b"x" * (1024 * 1024 + 1)),
    ),
    Case(
        "timeout-without-unit",
        ("create", "--title", "t", "--body", "b", "--timeout", "30"),
        "--timeout: cannot read duration",
    ),
    Case(
        "timeout-zero",
        ("create", "--title", "t", "--body", "b", "--timeout", "0m"),
        "greater than zero",
    ),
    Case(
        "timeout-past-its-bound",
        ("create", "--title", "t", "--body", "b", "--timeout", "8d"),
        "the limit is 7d",
    ),
    Case(
        "timeout-overflowing",
        ("create", "--title", "t", "--body", "b", "--timeout", "999999999d", "--queue"),
        "the limit is 7d",
    ),
    Case(
        "timeout-400-digits",
        ("create", "--title", "t", "--body", "b", "--timeout", "9" * 400 + "d"),
        "the limit is 7d",
    ),
    Case(
        "unknown-agent",
        ("create", "--title", "t", "--body", "b", "--agent", "robot"),
        "--agent robot: unknown agent",
    ),
    Case(
        "workspace-missing",
        ("create", "--title", "t", "--body", "b", "--workspace", "nowhere"),
        "no such directory",
    ),
    # an item's own budget (create, requeue)
    Case(
        "max-cost-not-a-number",
        create_with("--max-cost-usd", "five"),
        "--max-cost-usd: 'five' is not a number: write it in plain digits, such as 5 or 2.5",
    ),
    Case(
        "max-cost-empty",
        create_with("--max-cost-usd", ""),
        "--max-cost-usd: '' is not a number",
    ),
    Case(
        "max-cost-with-a-dollar-sign",
        create_with("--max-cost-usd", "$5"),
        "--max-cost-usd: '$5' is not a number",
    ),
    Case(
        "max-cost-zero",
        create_with("--max-cost-usd", "0", "--queue"),
        "--max-cost-usd 0: must be more than 0",
    ),
    Case(
        "max-cost-negative",
        create_with("--max-cost-usd", "-1"),
        "--max-cost-usd -1: must be more than 0",
    ),
    Case(
        "max-cost-nan",
        create_with("--max-cost-usd", "nan"),
        "--max-cost-usd: 'nan' is not a number",
    ),
    Case(
        "max-cost-infinite",
        create_with("--max-cost-usd", "inf"),
        "--max-cost-usd: 'inf' is not a number",
    ),
    Case(
        "max-cost-too-large",
        create_with("--max-cost-usd", "1000001"),
        "--max-cost-usd 1000001: must be more than 0 and at most",
    ),
    Case(
        "max-cost-400-digits",
        create_with("--max-cost-usd", "9" * 400),
        "must be more than 0 and at most",
    ),
    Case(
        "max-cost-with-escape",
        create_with("--max-cost-usd", "\x1b]52;c;ZWNobyBwd25lZA==\x07"),
        "is not a number: write it in plain digits",
    ),
    # one rule for numbers, for every option and id (docs/cli.md#numbers)
    *(
        Case(f"number-{name}", args, says)
        for name, args, says in (
            ("cost-underscore", create_with("--max-cost-usd", "1_000"), "'1_000' is not a number"),
            ("tokens-underscore", create_with("--max-tokens", "1_000"), "'1_000' is not a whole"),
            ("cost-comma", create_with("--max-cost-usd", "1,000"), "'1,000' is not a number"),
            ("tokens-space", create_with("--max-tokens", " 5"), "' 5' is not a whole number"),
            ("tokens-plus", create_with("--max-tokens", "+5"), "'+5' is not a whole number"),
            ("interval-nan", ("inbox", "--interval", "nan"), "'nan' is not a number"),
            ("interval-inf", ("inbox", "--interval", "inf"), "'inf' is not a number"),
            ("interval-exponent", ("inbox", "--interval", "1e1"), "'1e1' is not a number"),
            ("limit-underscore", ("reap", "--limit", "1_000"), "'1_000' is not a whole number"),
            ("id-underscore", ("show", "0_1"), "'0_1' is not a whole number"),
            ("id-arabic-digits", ("show", "\u0661"), "is not a whole number"),
            ("workers-space", ("status", "--min-workers", " 1"), "' 1' is not a whole number"),
        )
    ),
    Case(
        "max-tokens-fraction",
        create_with("--max-tokens", "1.5"),
        "--max-tokens: '1.5' is not a whole number",
    ),
    Case(
        "max-tokens-exponent",
        create_with("--max-tokens", "1e6"),
        "--max-tokens: '1e6' is not a whole number",
    ),
    Case(
        "max-tokens-not-a-number",
        create_with("--max-tokens", "lots"),
        "--max-tokens: 'lots' is not a whole number",
    ),
    Case(
        "max-tokens-zero",
        create_with("--max-tokens", "0"),
        "--max-tokens 0: must be more than 0",
    ),
    Case(
        "max-tokens-negative",
        create_with("--max-tokens", "-5"),
        "--max-tokens -5: must be more than 0",
    ),
    Case(
        "max-tokens-too-large",
        create_with("--max-tokens", "1000000000001"),
        "--max-tokens 1000000000001: must be more than 0 and at most",
    ),
    Case(
        "max-tokens-5000-digits",
        create_with("--max-tokens", "9" * 5000),
        "must be more than 0 and at most",
    ),
    Case(
        "requeue-max-cost-not-a-number",
        ("requeue", "1", "--resume", "--max-cost-usd", "ten"),
        "--max-cost-usd: 'ten' is not a number",
        setup=item("--max-cost-usd", "5"),
    ),
    Case(
        "requeue-max-cost-zero",
        ("requeue", "1", "--fresh", "--max-cost-usd", "0"),
        "--max-cost-usd 0: must be more than 0",
        setup=item("--max-cost-usd", "5"),
    ),
    Case(
        "requeue-max-cost-negative",
        ("requeue", "1", "--resume", "--max-cost-usd", "-2"),
        "--max-cost-usd -2: must be more than 0",
        setup=item(),
    ),
    Case(
        "requeue-max-cost-nan",
        ("requeue", "1", "--resume", "--max-cost-usd", "NaN"),
        "--max-cost-usd: 'NaN' is not a number",
        setup=item(),
    ),
    Case(
        "requeue-max-cost-too-large",
        ("requeue", "1", "--resume", "--max-cost-usd", "1e7"),
        "--max-cost-usd: '1e7' is not a number",
        setup=item(),
    ),
    Case(
        "requeue-max-tokens-fraction",
        ("requeue", "1", "--resume", "--max-tokens", "2.5"),
        "--max-tokens: '2.5' is not a whole number",
        setup=item("--max-tokens", "1000"),
    ),
    Case(
        "requeue-max-tokens-zero",
        ("requeue", "1", "--fresh", "--max-tokens", "0"),
        "--max-tokens 0: must be more than 0",
        setup=item(),
    ),
    Case(
        "requeue-max-cost-of-an-unknown-item",
        ("requeue", "99", "--resume", "--max-cost-usd", "5"),
        "no item 99",
    ),
    Case(
        "requeue-a-todo-item-with-a-budget",
        ("requeue", "1", "--fresh", "--max-cost-usd", "5"),
        "requeue takes items",
        setup=item(),
    ),
    # scheduling: create's priority, dependencies and labels; edit; the limits in wrighty.json
    Case("priority-out-of-range", create_with("--priority", "4"), "--priority 4: give 0 to 3"),
    Case("priority-negative", create_with("--priority", "-1"), "give 0 to 3 or P0 to P3"),
    Case("priority-a-word", create_with("--priority", "high"), "--priority high: give 0 to 3"),
    Case("priority-p4", create_with("--priority", "P4"), "--priority P4: give 0 to 3"),
    Case("priority-empty", create_with("--priority", ""), "give 0 to 3 or P0 to P3"),
    Case(
        "priority-with-escape",
        create_with("--priority", "\x1b]52;c;ZWNobyBwd25lZA==\x07"),
        "give 0 to 3 or P0 to P3",
    ),
    Case("after-an-unknown-item", create_with("--after", "99"), "--after 99: no item 99"),
    Case(
        "after-a-known-and-an-unknown-item",
        create_with("--after", "1", "--after", "7"),
        "--after 7: no item 7",
        setup=item(),
    ),
    Case("after-zero", create_with("--after", "0"), "--after"),
    Case("after-not-a-number", create_with("--after", "one"), "'one' is not a whole number"),
    Case("after-past-the-range", create_with("--after", "9" * 30), "9223372036854775807"),
    Case("label-uppercase", create_with("--label", "Docs"), "--label Docs: labels use lowercase"),
    Case("label-empty", create_with("--label", ""), "labels use lowercase"),
    Case("label-too-long", create_with("--label", "a" * 41), "at most 40 characters"),
    Case("label-with-a-space", create_with("--label", "a b"), "labels use lowercase"),
    Case(
        "too-many-labels",
        create_with(*(arg for n in range(21) for arg in ("--label", f"l{n}"))),
        "at most 20 labels",
    ),
    Case("edit-unknown-item", ("edit", "99", "--priority", "0"), "no item 99"),
    Case("edit-without-a-change", ("edit", "1"), "say what to change", setup=item()),
    Case("edit-priority-bad", ("edit", "1", "--priority", "9"), "give 0 to 3", setup=item()),
    Case(
        "edit-priority-unchanged",
        ("edit", "1", "--priority", "P2"),
        "item 1 already is as asked",
        setup=item(),
    ),
    Case(
        "edit-after-itself",
        ("edit", "1", "--after", "1"),
        "an item cannot come after itself",
        setup=item(),
    ),
    Case(
        "edit-after-an-unknown-item",
        ("edit", "1", "--after", "5"),
        "--after 5: no item 5",
        setup=item(),
    ),
    Case(
        "edit-closing-a-cycle",
        ("edit", "1", "--after", "2"),
        "that would make a cycle: item 2 already comes after item 1",
        setup=with_setups(item(), item("--after", "1")),
    ),
    Case(
        "edit-not-after-an-item-it-does-not-follow",
        ("edit", "1", "--not-after", "2"),
        "item 1 does not come after item 2",
        setup=with_setups(item(), item()),
    ),
    Case(
        "edit-after-and-not-after-at-once",
        ("edit", "2", "--after", "1", "--not-after", "1"),
        "is given to both --after and --not-after",
        setup=with_setups(item(), item()),
    ),
    Case(
        "edit-a-cancelled-item",
        ("edit", "1", "--priority", "0"),
        "item 1 is cancelled: it is final",
        setup=with_setups(item(), lambda p: _cancel(p, 1)),
    ),
    Case("edit-id-zero", ("edit", "0", "--priority", "1"), "greater than or equal to 1"),
    Case(
        "config-agent-max-concurrent-zero",
        ("list",),
        "agents.claude.maxConcurrent: must be >= 1 (got 0)",
        setup=config_json({"agents": {"claude": {"maxConcurrent": 0}}}),
    ),
    Case(
        "config-agent-max-concurrent-as-string",
        ("list",),
        "agents.claude.maxConcurrent: must be a valid integer (got a string)",
        setup=config_json({"agents": {"claude": {"maxConcurrent": "2"}}}),
    ),
    Case(
        "config-agent-max-concurrent-fraction",
        ("list",),
        "agents.claude.maxConcurrent: must be a valid integer (got 1.5)",
        setup=config_json({"agents": {"claude": {"maxConcurrent": 1.5}}}),
    ),
    Case(
        "config-agent-max-concurrent-too-large",
        ("list",),
        "agents.claude.maxConcurrent: must be <= 10000 (got 10001)",
        setup=config_json({"agents": {"claude": {"maxConcurrent": 10001}}}),
    ),
    Case(
        "config-label-limit-bad-name",
        ("list",),
        "limits.labels.Docs: labels use lowercase letters",
        setup=config_json({"limits": {"labels": {"Docs": {"maxConcurrent": 1}}}}),
    ),
    Case(
        "config-label-limit-without-max",
        ("list",),
        "limits.labels.docs.maxConcurrent: is required",
        setup=config_json({"limits": {"labels": {"docs": {}}}}),
    ),
    Case(
        "config-label-limit-zero",
        ("list",),
        "limits.labels.docs.maxConcurrent: must be >= 1 (got 0)",
        setup=config_json({"limits": {"labels": {"docs": {"maxConcurrent": 0}}}}),
    ),
    Case(
        "config-label-limit-unknown-key",
        ("list",),
        "limits.labels.docs.max: unknown key (allowed here: maxConcurrent)",
        setup=config_json({"limits": {"labels": {"docs": {"maxConcurrent": 1, "max": 1}}}}),
    ),
    Case(
        "config-limits-unknown-key",
        ("list",),
        "limits.agents: unknown key (allowed here: labels)",
        setup=config_json({"limits": {"agents": {}}}),
    ),
    Case(
        "config-limits-not-an-object",
        ("list",),
        "limits: must be an object",
        setup=config_json({"limits": 3}),
    ),
    # operator moves
    Case("queue-a-queued-item", ("queue", "1"), "moves todo items only", setup=item("--queue")),
    Case("requeue-without-how", ("requeue", "1"), "say how item 1 starts again", setup=item()),
    Case(
        "requeue-both-ways",
        ("requeue", "1", "--resume", "--fresh"),
        "say how item 1 starts again",
        setup=item(),
    ),
    Case("requeue-a-todo-item", ("requeue", "1", "--fresh"), "requeue takes items", setup=item()),
    Case("release-without-force", ("release", "1"), "--force", setup=item("--queue")),
    Case("logs-of-an-item-without-runs", ("logs", "1"), "has no runs yet", setup=item()),
    Case("logs-unknown-stream", ("logs", "1", "--stream", "both2"), "--stream", setup=item()),
    Case("reap-limit-zero", ("reap", "--limit", "0"), "greater than or equal to 1"),
    Case("reap-limit-past-range", ("reap", "--limit", "9223372036854775808"), "100000"),
    # list and status
    Case("unknown-state", ("list", "--state", "finished"), "unknown state 'finished'"),
    Case(
        "attention-with-another-state",
        ("list", "--attention", "--state", "queued"),
        "--attention lists needs-attention items only",
    ),
    Case("since-unreadable", ("list", "--since", "yesterday"), "--since: cannot read 'yesterday'"),
    Case("since-empty", ("list", "--since", ""), "--since: cannot read ''"),
    Case("since-zero", ("list", "--since", "0h"), "--since: duration '0h' must be greater"),
    Case("since-too-far-back", ("list", "--since", "400d"), "the limit is 366d"),
    Case("since-a-day-alone", ("list", "--since", "2026-12-05"), "names a day without a time"),
    Case("since-in-the-future", ("list", "--since", "2999-01-01T00:00Z"), "is in the future"),
    Case("since-hour-past-23", ("list", "--since", "24:00"), "--since: cannot read '24:00'"),
    Case(
        "since-offset-without-colon",
        ("list", "--since", "2026-12-05T18:00+0100"),
        "an offset RFC 3339 does not allow",
    ),
    Case(
        "since-with-attention",
        ("list", "--attention", "--since", "nope"),
        "--since: cannot read 'nope'",
    ),
    Case("inbox-interval-zero", ("inbox", "--interval", "0"), "--interval"),
    Case("inbox-interval-not-a-number", ("inbox", "--interval", "soon"), "--interval"),
    Case("inbox-interval-past-bound", ("inbox", "--interval", "7200"), "--interval"),
    Case("inbox-unknown-option", ("inbox", "--watch"), "No such option"),
    Case("inbox-without-a-terminal", ("inbox",), "needs a terminal"),
    Case("inbox-read-only-without-a-terminal", ("inbox", "--read-only"), "needs a terminal"),
    # serve: refused before it listens
    Case("serve-port-negative", ("serve", "--port", "-1"), "--port"),
    Case("serve-port-past-range", ("serve", "--port", "65536"), "--port"),
    Case("serve-port-not-a-number", ("serve", "--port", "http"), "--port"),
    Case("serve-remote-bind", ("serve", "--bind", "0.0.0.0"), "pass --allow-remote too"),
    Case("serve-remote-bind-v6", ("serve", "--bind", "::"), "pass --allow-remote too"),
    Case("serve-bind-a-name", ("serve", "--bind", "example.com"), "--bind example.com: give"),
    Case("serve-bind-control", ("serve", "--bind", "1.2.3.4\x1b[2J"), "--bind 1.2.3.4"),
    Case("serve-allow-host-space", ("serve", "--allow-host", "a b"), "--allow-host a b: give"),
    Case("serve-allow-host-empty", ("serve", "--allow-host", ""), "--allow-host"),
    Case(
        "serve-token-file-others-read",
        ("serve", "--token-file", "token"),
        "group or others may read or write it",
        setup=lambda project: _private_file(project / "token", "t" * 43, 0o644),
    ),
    Case(
        "serve-token-file-no-token",
        ("serve", "--token-file", "token"),
        "does not hold a token",
        setup=lambda project: _private_file(project / "token", "short", 0o600),
    ),
    Case("serve-token-file-a-folder", ("serve", "--token-file", "."), "--token-file"),
    Case(
        # 2 GB (sparse, beside the project): refused after 4 KiB, never read whole
        "serve-token-file-huge",
        ("serve", "--token-file", "../huge-token"),
        "--token-file ../huge-token: is larger than 4 KiB; it holds one token",
        setup=lambda project: _huge_private_file(project.parent / "huge-token", 2 * 1024**3),
    ),
    Case("serve-unknown-option", ("serve", "--open"), "No such option"),
    Case(
        # a message quotes a runaway input's start and end only
        "create-agent-runaway",
        ("create", "--title", "t", "--body", "b", "--agent", "x" * 5000),
        "characters cut]… ",
    ),
    Case("unknown-option-runaway", ("list", "--" + "x" * 5000), "characters cut]… "),
    Case("diff-redact-unknown-item", ("diff", "999", "--redact"), "item 999 does not exist"),
    Case("diff-redact-with-a-value", ("diff", "1", "--redact=yes"), "--redact"),
    Case("serve-body-timeout-zero", ("serve", "--body-timeout", "0s"), "--body-timeout: duration"),
    Case(
        "serve-body-timeout-too-long",
        ("serve", "--body-timeout", "2h"),
        "--body-timeout: duration '2h' is too long: the limit is 1h",
    ),
    Case(
        "serve-body-timeout-not-a-duration",
        ("serve", "--body-timeout", "soon"),
        "--body-timeout: cannot read duration 'soon'",
    ),
    Case(
        "serve-secure-cookie-with-a-value",
        ("serve", "--secure-cookie=yes"),
        "--secure-cookie",
    ),
    Case("status-unknown-format", ("status", "--format", "xml"), "--format: expected"),
    Case("status-watch-as-json", ("status", "--watch", "--json"), "--watch shows the terminal"),
    Case(
        "status-wait-without-unit",
        ("status", "--max-queue-wait", "5"),
        "--max-queue-wait: cannot read duration",
    ),
    Case("status-wait-past-bound", ("status", "--max-queue-wait", "400d"), "the limit is 365d"),
    Case("status-age-past-bound", ("status", "--worker-max-age", "2d"), "the limit is 1d"),
    Case("status-negative-workers", ("status", "--min-workers", "-1"), "greater than or equal"),
    Case(
        "status-open-circuits-negative",
        ("status", "--max-open-circuits", "-1"),
        "'--max-open-circuits': Input should be greater than or equal to 0",
    ),
    Case(
        "status-open-circuits-not-a-number",
        ("status", "--max-open-circuits", "two"),
        "'--max-open-circuits': 'two' is not a whole number",
    ),
    Case(
        "status-open-circuits-too-large",
        ("status", "--max-open-circuits", "10001"),
        "'--max-open-circuits': Input should be less than or equal to 10000",
    ),
    Case(
        "status-open-circuits-past-any-range",
        ("status", "--max-open-circuits", "9" * 40),
        "less than or equal to 10000",
    ),
    Case(
        "status-notify-age-without-unit",
        ("status", "--max-notify-age", "5"),
        "--max-notify-age: cannot read duration",
    ),
    Case(
        "status-notify-age-past-bound",
        ("status", "--max-notify-age", "400d"),
        "--max-notify-age: duration '400d' is too long: the limit is 365d",
    ),
    Case(
        "status-notify-age-zero",
        ("status", "--max-notify-age", "0s"),
        "--max-notify-age: duration '0s' must be greater than zero",
    ),
    Case(
        "status-review-wait-without-unit",
        ("status", "--max-review-wait", "5"),
        "--max-review-wait: cannot read duration",
    ),
    Case(
        "status-review-wait-past-bound",
        ("status", "--max-review-wait", "400d"),
        "--max-review-wait: duration '400d' is too long: the limit is 365d",
    ),
    Case(
        "status-review-wait-zero",
        ("status", "--max-review-wait", "0s"),
        "--max-review-wait: duration '0s' must be greater than zero",
    ),
    Case(
        "status-review-wait-negative",
        ("status", "--max-review-wait", "-5m"),
        "--max-review-wait: cannot read duration",
    ),
    # notifications
    Case(
        "notify-test-url-apprise-cannot-use",
        ("notify", "test", "--url", f"slack://{SECRET}/{API_KEY}"),
        "--url Apprise cannot use this slack:// URL",
    ),
    Case(
        "notify-test-url-unknown-service",
        ("notify", "test", "--url", f"bogus://{SECRET}"),
        "--url Apprise cannot read this bogus:// URL",
    ),
    Case(
        "notify-test-url-without-scheme",
        ("notify", "test", "--url", SECRET),
        "--url is not an Apprise URL",
    ),
    Case(
        "notify-test-two-urls-in-one",
        ("notify", "test", "--url", f"json://a/{SECRET} json://b/{SECRET}"),
        "--url holds more than one URL",
    ),
    Case("notify-test-url-without-value", ("notify", "test", "--url"), "requires an argument"),
    Case("notify-test-without-sinks", ("notify", "test"), "no notification sinks are configured"),
    Case("notify-flush-without-sinks", ("notify", "flush"), "nothing was delivered"),
    Case("notify-pending-unknown-option", ("notify", "pending", "--all"), "No such option"),
    Case("notify-json-before-the-subcommand", ("notify", "--json", "pending"), "No such option"),
    Case("notify-unknown-subcommand", ("notify", "retry"), "No such command 'retry'"),
    Case("notify-without-a-subcommand", ("notify",), "Missing command"),
    Case(
        "notify-flush-refuses-a-bad-notify-config",
        ("notify", "flush"),
        "notify.urls.0: Apprise cannot use this slack:// URL",
        setup=notify({"urls": [f"slack://{SECRET}"]}),
    ),
    # provider circuits
    Case(
        "unknown-circuit-reset",
        ("providers", "reset", "account:nosuch"),
        "no provider circuit 'account:nosuch'; `wrighty providers` lists",
    ),
    Case(
        "circuit-name-with-osc52",
        ("providers", "reset", "\x1b]52;c;ZWNobyBwd25lZA==\x07"),
        "no provider circuit '\\x1b]52;c;ZWNobyBwd25lZA==\\x07'",
    ),
    Case("reset-without-a-name", ("providers", "reset"), "Missing argument 'NAME'"),
    Case(
        "providers-json-before-reset",
        ("providers", "--json", "reset", "account:team"),
        "--json goes after the subcommand",
    ),
    Case("providers-unknown-subcommand", ("providers", "open"), "No such command 'open'"),
    Case("workers-age-zero", ("workers", "--worker-max-age", "0s"), "greater than zero"),
    # worker and agents
    Case(
        "idle-timeout-overflowing",
        ("worker", "start", "--idle-timeout", "99999999999d"),
        "the limit is 30d",
    ),
    Case(
        "idle-timeout-unreadable",
        ("worker", "start", "--idle-timeout", "soon"),
        "--idle-timeout: cannot read duration",
    ),
    Case("concurrency-zero", ("worker", "start", "--concurrency", "0"), "--concurrency"),
    Case("concurrency-too-high", ("worker", "start", "--concurrency", "65"), "--concurrency"),
    Case(
        "worker-item-todo",
        ("worker", "start", "--item", "1"),
        "item 1 is todo; queue it with `wrighty queue 1`",
        setup=with_setups(command_agent("true"), item()),
    ),
    Case(
        "worker-item-cancelled",
        ("worker", "start", "--item", "1"),
        "item 1 is cancelled",
        setup=with_setups(command_agent("true"), item(), lambda p: _cancel(p, 1)),
    ),
    Case(
        "worker-agent-not-executable",
        ("worker", "start", "--once"),
        "is not executable (chmod +x",
        setup=with_setups(command_agent("./agent.sh"), not_executable),
    ),
    Case(
        "worker-agent-missing",
        ("worker", "start", "--once"),
        "not found on PATH",
        setup=command_agent("no-such-agent-program"),
    ),
    Case(
        "worker-sandbox-program-missing",
        ("worker", "start", "--once"),
        "worker.sandbox: bubblewrap 'no-such-bwrap' is not installed; install it",
        setup=config_json({"worker": {"defaultAgent": "demo", "sandbox": MISSING_BWRAP}, **DEMO}),
    ),
    Case(
        "worker-sandbox-program-fails",
        ("worker", "start", "--once"),
        "agents.demo.sandbox: bubblewrap '/bin/false' cannot start a sandbox (exit code 1)",
        setup=config_json(
            {
                "worker": {"defaultAgent": "demo"},
                "agents": {"demo": {**DEMO["agents"]["demo"], "sandbox": FAILING_BWRAP}},
            }
        ),
    ),
    Case("worker-unknown-agent", ("worker", "start", "--agent", "robot"), "unknown agent 'robot'"),
    Case("check-without-yes", ("agents", "--check"), "add --yes to go ahead"),
    Case("finish-outside-a-run", ("finish",), "WRIGHTY_RUN_ID and WRIGHTY_CLAIM_TOKEN"),
    Case("fail-outside-a-run", ("fail", "--reason", "x"), "WRIGHTY_RUN_ID and WRIGHTY_CLAIM_TOKEN"),
    in_run("fail-without-reason", ("fail",), "wrighty fail needs --reason TEXT"),
    in_run(
        "fail-resets-without-usage-limit",
        ("fail", "--reason", "x", "--resets-at", "2h"),
        "--resets-at goes with --usage-limit",
    ),
    in_run(
        "fail-resets-at-no-offset",
        ("fail", "--usage-limit", "--resets-at", "2026-12-03T14:00"),
        "--resets-at: time '2026-12-03T14:00' names no offset",
    ),
    in_run(
        "fail-resets-at-offset-with-seconds",
        ("fail", "--usage-limit", "--resets-at", "2026-12-03T14:00:00+00:00:30"),
        "has an offset RFC 3339 does not allow: give Z or ±HH:MM (+01:00)",
    ),
    in_run(
        "fail-resets-at-unreadable",
        ("fail", "--usage-limit", "--resets-at", "after lunch"),
        "--resets-at: cannot read time 'after lunch': use RFC 3339 with an offset",
    ),
    in_run(
        "fail-resets-at-too-far",
        ("fail", "--usage-limit", "--resets-at", "32d"),
        "--resets-at: duration '32d' is too long: the limit is 31d",
    ),
    in_run(
        "fail-resets-at-long-ago",
        ("fail", "--usage-limit", "--resets-at", "2001-01-01T00:00:00Z"),
        "is more than a day ago",
    ),
    in_run("run-store-empty", ("finish",), "WRIGHTY_RUN_STORE is empty", "WRIGHTY_RUN_STORE="),
    in_run(
        "run-store-scheme",
        ("fail", "--reason", "x"),
        "WRIGHTY_RUN_STORE: unsupported store URL scheme",
        f"WRIGHTY_RUN_STORE=mysql://u:{SECRET}@db/queue",
    ),
    in_run(
        "run-store-relative",
        ("finish",),
        "WRIGHTY_RUN_STORE must be an absolute store URL",
        "WRIGHTY_RUN_STORE=sqlite:///wrighty.db",
    ),
    in_run(
        "run-store-unreadable-url",
        ("report-usage", "--input-tokens", "1"),
        "WRIGHTY_RUN_STORE: ",
        f"WRIGHTY_RUN_STORE=postgresql://u:{SECRET}@[::1/queue",
    ),
    in_run(
        "run-pricing-not-json",
        ("report-usage", "--input-tokens", "1"),
        "WRIGHTY_RUN_PRICING is not JSON",
        NO_STORE,
        "WRIGHTY_RUN_PRICING={",
    ),
    in_run(
        "run-pricing-not-an-object",
        ("report-usage", "--input-tokens", "1"),
        "WRIGHTY_RUN_PRICING is not a JSON object",
        NO_STORE,
        "WRIGHTY_RUN_PRICING=[1, 2, 3, 4]",
    ),
    in_run(
        "run-pricing-short",
        ("report-usage", "--input-tokens", "1"),
        'the price of "m" is not four numbers',
        NO_STORE,
        'WRIGHTY_RUN_PRICING={"m": [1, 2]}',
    ),
    in_run(
        "run-pricing-negative",
        ("report-usage", "--input-tokens", "1"),
        'the price of "m" is not four numbers from 0 to 10000',
        NO_STORE,
        'WRIGHTY_RUN_PRICING={"m": [-1, 2, 0, 0]}',
    ),
    in_run(
        "run-pricing-unnamed-model",
        ("report-usage", "--input-tokens", "1"),
        "WRIGHTY_RUN_PRICING: a model name has 1 to 200 characters",
        NO_STORE,
        'WRIGHTY_RUN_PRICING={"": [1, 2, 0, 0]}',
    ),
    # stores
    Case("store-mysql", ("--store", "mysql://x/y", "list"), "unsupported store URL scheme"),
    Case("store-typo", ("--store", "typo.db", "show", "1"), "no store here; run `wrighty init`"),
    Case(
        "store-not-a-database",
        ("--store", "notes.db", "list"),
        "is not a SQLite database",
        setup=file("notes.db", b"shopping list"),
    ),
    Case(
        "store-of-another-program",
        ("--store", "other.db", "list"),
        "not a wrighty store",
        setup=foreign_database,
    ),
    Case("store-a-folder", ("--store", "box", "list"), "is a directory", setup=folder("box")),
    Case("store-names-no-file", ("--store", "sqlite:///", "list"), "names no file"),
    Case("store-emptied", ("list",), "is empty", setup=empty_store),
    Case("store-emptied-show", ("show", "1"), "is empty", setup=empty_store),
    Case("store-from-a-newer-wrighty", ("list",), "newer wrighty", setup=newer_store),
    Case(
        "store-emptied-beside-its-wal",
        ("list",),
        "wrighty.db-wal beside it is not",
        setup=with_setups(empty_store, file(".wrighty/wrighty.db-wal", b"\x37\x7f\x06\x82")),
    ),
    Case(
        "store-without-tables",
        ("--store", "e.db", "list"),
        "not a wrighty store yet; run `wrighty init`",
        setup=table_less_database,
    ),
    Case(
        "postgres-key-value-dsn",
        ("--store", f"host=127.0.0.1 dbname=test password={SECRET}", "list"),
        "write it as a URL",
    ),
    Case(
        "postgres-one-slash",
        ("--store", f"postgresql:/u:{SECRET}@h/db", "list"),
        "postgresql:// (two slashes)",
    ),
    Case(
        "postgres-bad-percent-encoding",
        ("--store", f"postgresql://u:{SECRET}%zz@127.0.0.1/test", "list"),
        "invalid percent-encoded token",
    ),
    Case(
        "postgres-unknown-parameter",
        ("--store", f"postgresql://u:{SECRET}@127.0.0.1/test?bogus=1", "list"),
        'invalid URI query parameter: "bogus"',
    ),
    Case(
        "postgres-unencoded-at-in-password",
        ("--store", f"postgresql://u:p@{SECRET}@127.0.0.1/test", "list"),
        "percent-encode them",
    ),
    Case(
        "postgres-url-unclosed-bracket",
        ("--store", f"postgresql://u:{SECRET}@[::1", "list"),
        "postgresql://u@",
    ),
    Case(
        "postgres-url-bad-port",
        ("--store", f"postgresql://u:{SECRET}@127.0.0.1:99999/db", "list"),
        "postgresql://u@",
    ),
    Case(
        "postgres-nobody-listening",
        ("--store", f"postgresql://u:{SECRET}@127.0.0.1:1/db", "list"),
        "postgresql://u@127.0.0.1:1/db",
    ),
    Case(
        "postgres-bad-option",
        ("--store", f"postgresql://u:{SECRET}@127.0.0.1:1/db?sslmode=bogus", "list"),
        "postgresql://u@",
    ),
    Case(
        "init-postgres-bad-url",
        ("init", "--store", f"postgresql://u:{SECRET}@[::1"),
        "postgresql://u@",
    ),
    # wrighty.json
    Case("no-config", ("list",), "no wrighty.json", setup=no_config),
    Case("config-missing", ("--config", "missing.json", "list"), "no such config file"),
    Case("config-dev-zero", ("--config", "/dev/zero", "list"), "is a character device"),
    *(
        Case(
            name,
            args,
            "pipe.json: is a FIFO (named pipe), not a regular file",
            setup=fifo("pipe.json"),
        )
        for name, args in (
            ("config-a-fifo", ("--config", "pipe.json", "list")),
            ("validate-a-fifo", ("config", "validate", "pipe.json")),
        )
    ),
    Case(
        "config-invalid-json",
        ("list",),
        "invalid JSON at line 1",
        setup=config('{"worker": {"leaseSeconds": 60,}}'),
    ),
    Case("config-not-an-object", ("list",), "must be a JSON object", setup=config("[]")),
    Case(
        "config-unknown-key",
        ("list",),
        "worker.pollSecs: unknown key",
        setup=config_json({"worker": {"pollSecs": 5}}),
    ),
    Case(
        "config-wrong-type",
        ("list",),
        'must be a valid integer (got the string "two")',
        setup=config_json({"worker": {"concurrency": "two"}}),
    ),
    Case(
        "config-number-as-string",
        ("list",),
        '(got the string "60")',
        setup=config_json({"worker": {"leaseSeconds": "60"}}),
    ),
    Case(
        "config-wake-ups-a-string",
        ("list",),
        'worker.wakeUps: must be a valid boolean (got the string "yes")',
        setup=config_json({"worker": {"wakeUps": "yes"}}),
    ),
    Case(
        "config-wake-ups-a-number",
        ("worker", "start", "--once"),
        "worker.wakeUps: must be a valid boolean (got 1)",
        setup=config_json({"worker": {"wakeUps": 1}}),
    ),
    Case(
        "config-negative-timeout",
        ("list",),
        "worker.itemTimeoutMinutes: must be > 0",
        setup=config_json({"worker": {"itemTimeoutMinutes": -1}}),
    ),
    Case(
        "config-timeout-past-bound",
        ("list",),
        "worker.itemTimeoutMinutes: must be <= 10080",
        setup=config_json({"worker": {"itemTimeoutMinutes": 10081}}),
    ),
    Case(
        "config-multiplier-zero",
        ("list",),
        "must be >= 1",
        setup=config_json({"worker": {"processCrash": {"backoffMultiplier": 0}}}),
    ),
    Case(
        "config-heartbeat-not-below-lease",
        ("list",),
        "worker.heartbeatSeconds: must be <",
        setup=config_json({"worker": {"leaseSeconds": 10, "heartbeatSeconds": 10}}),
    ),
    Case(
        "config-heartbeat-inside-the-lease-guards-margin",
        ("worker", "start", "--once"),
        "worker.heartbeatSeconds: must be < 50: worker.leaseSeconds (60) less the lease",
        setup=config_json({"worker": {"leaseSeconds": 60, "heartbeatSeconds": 50}}),
    ),
    Case(
        "config-retry-max-below-initial",
        ("list",),
        "maxRetryMinutes: must be >=",
        setup=config_json(
            {"worker": {"processCrash": {"initialRetryMinutes": 10, "maxRetryMinutes": 5}}}
        ),
    ),
    Case(
        "config-attempts-past-ceiling",
        ("list",),
        "maxAttempts: must be <= 20",
        setup=config_json({"worker": {"processCrash": {"maxAttempts": 21}}}),
    ),
    Case(
        "config-usage-action-wrong-type",
        ("list",),
        "worker.usageFailure.action: must be 'needs-attention' or 'retry' (got 1)",
        setup=usage_failure({"action": 1}),
    ),
    Case(
        "config-usage-action-unknown",
        ("list",),
        "worker.usageFailure.action: must be 'needs-attention' or 'retry' "
        '(got the string "wait")',
        setup=usage_failure({"action": "wait"}),
    ),
    Case(
        "config-usage-initial-as-string",
        ("list",),
        'worker.usageFailure.initialRetryMinutes: must be a valid number (got the string "30")',
        setup=usage_failure({"initialRetryMinutes": "30"}),
    ),
    Case(
        "config-usage-initial-zero",
        ("list",),
        "worker.usageFailure.initialRetryMinutes: must be > 0 (got 0)",
        setup=usage_failure({"initialRetryMinutes": 0}),
    ),
    Case(
        "config-usage-initial-past-bound",
        ("list",),
        "worker.usageFailure.initialRetryMinutes: must be <= 1440 (got 1441)",
        setup=usage_failure({"initialRetryMinutes": 1441}),
    ),
    Case(
        "config-usage-multiplier-boolean",
        ("list",),
        "worker.usageFailure.backoffMultiplier: must be a valid number (got true)",
        setup=usage_failure({"backoffMultiplier": True}),
    ),
    Case(
        "config-usage-multiplier-below-one",
        ("list",),
        "worker.usageFailure.backoffMultiplier: must be >= 1 (got 0.5)",
        setup=usage_failure({"backoffMultiplier": 0.5}),
    ),
    Case(
        "config-usage-multiplier-past-bound",
        ("list",),
        "worker.usageFailure.backoffMultiplier: must be <= 100 (got 101)",
        setup=usage_failure({"backoffMultiplier": 101}),
    ),
    Case(
        "config-usage-max-null",
        ("list",),
        "worker.usageFailure.maxRetryMinutes: must be a valid number (got null)",
        setup=usage_failure({"maxRetryMinutes": None}),
    ),
    Case(
        "config-usage-max-zero",
        ("list",),
        "worker.usageFailure.maxRetryMinutes: must be > 0 (got 0)",
        setup=usage_failure({"maxRetryMinutes": 0}),
    ),
    Case(
        "config-usage-max-past-seven-days",
        ("list",),
        "worker.usageFailure.maxRetryMinutes: must be <= 10080 (got 10081)",
        setup=usage_failure({"maxRetryMinutes": 10081}),
    ),
    Case(
        "config-usage-attempts-fraction",
        ("list",),
        "worker.usageFailure.maxAttempts: must be a valid integer (got 2.5)",
        setup=usage_failure({"maxAttempts": 2.5}),
    ),
    Case(
        "config-usage-attempts-zero",
        ("list",),
        "worker.usageFailure.maxAttempts: must be >= 1 (got 0)",
        setup=usage_failure({"maxAttempts": 0}),
    ),
    Case(
        "config-usage-attempts-past-ceiling",
        ("list",),
        "worker.usageFailure.maxAttempts: must be <= 50 (got 51)",
        setup=usage_failure({"maxAttempts": 51}),
    ),
    Case(
        "config-usage-grace-list",
        ("list",),
        "worker.usageFailure.resetGraceMinutes: must be a valid number (got a list)",
        setup=usage_failure({"resetGraceMinutes": [2]}),
    ),
    Case(
        "config-usage-grace-negative",
        ("list",),
        "worker.usageFailure.resetGraceMinutes: must be >= 0 (got -1)",
        setup=usage_failure({"resetGraceMinutes": -1}),
    ),
    Case(
        "config-usage-grace-past-bound",
        ("list",),
        "worker.usageFailure.resetGraceMinutes: must be <= 60 (got 61)",
        setup=usage_failure({"resetGraceMinutes": 61}),
    ),
    Case(
        "config-handoff-after-zero",
        ("list",),
        "worker.usageFailure.handoffAfterMinutes: must be > 0 (got 0)",
        setup=usage_failure({"handoffAfterMinutes": 0}),
    ),
    Case(
        "config-handoff-after-past-bound",
        ("list",),
        "worker.usageFailure.handoffAfterMinutes: must be <= 10080 (got 10081)",
        setup=usage_failure({"handoffAfterMinutes": 10081}),
    ),
    Case(
        "config-handoff-after-string",
        ("list",),
        "worker.usageFailure.handoffAfterMinutes: must be a valid number (got the string",
        setup=usage_failure({"handoffAfterMinutes": "45"}),
    ),
    Case(
        "config-max-handoffs-zero",
        ("list",),
        "worker.usageFailure.maxHandoffs: must be >= 1 (got 0)",
        setup=usage_failure({"maxHandoffs": 0}),
    ),
    Case(
        "config-max-handoffs-past-bound",
        ("list",),
        "worker.usageFailure.maxHandoffs: must be <= 10 (got 11)",
        setup=usage_failure({"maxHandoffs": 11}),
    ),
    Case(
        "config-fallback-unknown-agent",
        ("list",),
        "agents.claude.fallback.0: unknown agent 'robot' (known: ",
        setup=config_json({"agents": {"claude": {"fallback": ["robot"]}}}),
    ),
    Case(
        "config-fallback-itself",
        ("list",),
        "agents.claude.fallback.1: an agent is not its own fallback",
        setup=config_json({"agents": {"claude": {"fallback": ["codex", "claude"]}}}),
    ),
    Case(
        "config-fallback-twice",
        ("list",),
        "agents.claude.fallback.1: 'codex' is listed twice",
        setup=config_json({"agents": {"claude": {"fallback": ["codex", "codex"]}}}),
    ),
    Case(
        "config-fallback-not-a-list",
        ("list",),
        "agents.claude.fallback: must be a valid list (got a string)",
        setup=config_json({"agents": {"claude": {"fallback": "codex"}}}),
    ),
    Case(
        "config-usage-unknown-key",
        ("list",),
        "worker.usageFailure.resetGrace: unknown key (allowed here: action,",
        setup=usage_failure({"resetGrace": 2}),
    ),
    Case(
        "config-usage-max-below-initial",
        ("list",),
        "worker.usageFailure.maxRetryMinutes: must be >= initialRetryMinutes (60) (got 30)",
        setup=usage_failure({"initialRetryMinutes": 60, "maxRetryMinutes": 30}),
    ),
    Case(
        "config-usage-not-an-object",
        ("list",),
        'worker.usageFailure: must be an object (got the string "retry")',
        setup=usage_failure("retry"),
    ),
    Case(
        "config-budget-unknown-agent",
        ("list",),
        "budgets.perDay.robot: unknown agent 'robot'",
        setup=budgets({"perDay": {"robot": {"maxCostUsd": 5}}}),
    ),
    Case(
        "config-budget-unknown-time-zone",
        ("list",),
        'budgets.timeZone: unknown time zone (got the string "Europe/Atlantis")',
        setup=budgets({"timeZone": "Europe/Atlantis"}),
    ),
    Case(
        "config-budget-time-zone-a-path",
        ("list",),
        "budgets.timeZone: unknown time zone",
        setup=budgets({"timeZone": "../../../etc/passwd"}),
    ),
    Case(
        "config-budget-time-zone-secret",
        ("list",),
        "budgets.timeZone: unknown time zone (got a string)",
        setup=budgets({"timeZone": f"{SECRET}-{API_KEY}"}),
    ),
    Case(
        "config-budget-day-start-past-midnight",
        ("list",),
        "budgets.dayStartsAt: String should match pattern",
        setup=budgets({"dayStartsAt": "24:00"}),
    ),
    Case(
        "config-budget-day-start-not-a-string",
        ("list",),
        "budgets.dayStartsAt: must be a valid string (got 6)",
        setup=budgets({"dayStartsAt": 6}),
    ),
    Case(
        "config-budget-negative-cost",
        ("list",),
        "budgets.perItem.maxCostUsd: must be > 0 (got -1)",
        setup=budgets({"perItem": {"maxCostUsd": -1}}),
    ),
    Case(
        "config-budget-cost-past-bound",
        ("list",),
        "budgets.perDay.codex.maxCostUsd: must be <=",
        setup=budgets({"perDay": {"codex": {"maxCostUsd": 1e308}}}),
    ),
    Case(
        "config-budget-tokens-zero",
        ("list",),
        "budgets.perItem.maxTokens: must be > 0 (got 0)",
        setup=budgets({"perItem": {"maxTokens": 0}}),
    ),
    Case(
        "config-budget-tokens-fraction",
        ("list",),
        'budgets.perDay["*"].maxTokens: must be a valid integer (got 2.5)',
        setup=budgets({"perDay": {"*": {"maxTokens": 2.5}}}),
    ),
    Case(
        "config-budget-unknown-key",
        ("list",),
        "budgets.perWeek: unknown key (allowed here: perItem, perDay, dayStartsAt, timeZone)",
        setup=budgets({"perWeek": {"*": {"maxTokens": 5}}}),
    ),
    Case(
        "config-budget-limit-unknown-key",
        ("list",),
        "budgets.perItem.maxCost: unknown key (allowed here: maxCostUsd, maxTokens)",
        setup=budgets({"perItem": {"maxCost": 5}}),
    ),
    Case(
        "config-budgets-not-an-object",
        ("list",),
        "budgets: must be an object (got a list)",
        setup=budgets([5]),
    ),
    Case(
        "config-pricing-without-output-price",
        ("list",),
        "pricing.gpt-5.outputPerMtok: is required",
        setup=pricing({"gpt-5": {"inputPerMtok": 1.25}}),
    ),
    Case(
        "config-pricing-negative-price",
        ("list",),
        "pricing.gpt-5.inputPerMtok: must be >= 0 (got -1)",
        setup=pricing({"gpt-5": {"inputPerMtok": -1, "outputPerMtok": 10}}),
    ),
    Case(
        "config-pricing-price-as-string",
        ("list",),
        'pricing["*"].outputPerMtok: must be a valid number (got the string "15")',
        setup=pricing({"*": {"inputPerMtok": 3, "outputPerMtok": "15"}}),
    ),
    Case(
        "config-pricing-empty-model-name",
        ("list",),
        'pricing[""]: a model name has 1 to 200 characters',
        setup=pricing({"": {"inputPerMtok": 1, "outputPerMtok": 2}}),
    ),
    Case(
        "config-pricing-unknown-key",
        ("list",),
        "pricing.gpt-5.cachedPerMtok: unknown key",
        setup=pricing({"gpt-5": {"inputPerMtok": 1, "outputPerMtok": 2, "cachedPerMtok": 1}}),
    ),
    Case(
        "validate-budget-problems",
        ("config", "validate"),
        "3 problems",
        stdout_allowed=True,
        setup=config_json(
            {
                "budgets": {"timeZone": "Nowhere/Zone", "perDay": {"robot": {"maxTokens": 5}}},
                "pricing": {"": {"inputPerMtok": 1, "outputPerMtok": 2}},
            }
        ),
    ),
    Case(
        "worker-refuses-a-bad-budget-config",
        ("worker", "start", "--once"),
        "budgets.timeZone: unknown time zone",
        setup=budgets({"timeZone": "Nowhere/Zone"}),
    ),
    Case(
        "config-notify-url-apprise-cannot-use",
        ("worker", "start", "--once"),
        "notify.urls.1: Apprise cannot use this slack:// URL",
        setup=notify({"urls": ["json://127.0.0.1:9/hook", f"slack://T1JJ3T3L2/{SECRET}"]}),
    ),
    Case(
        "config-notify-url-unknown-service",
        ("worker", "start", "--once"),
        "notify.urls.0: Apprise cannot read this bogus:// URL",
        setup=notify({"urls": [f"bogus://{SECRET}"]}),
    ),
    Case(
        "config-notify-url-without-scheme",
        ("worker", "start", "--once"),
        "notify.urls.0: is not an Apprise URL",
        setup=notify({"urls": [SECRET]}),
    ),
    Case(
        "config-notify-digest-not-a-time",
        ("list",),
        "notify.digest: cannot read it: give a time of day",
        setup=notify({"digest": "7:30am"}),
    ),
    Case(
        "config-notify-digest-hour-25",
        ("list",),
        "notify.digest: cannot read it",
        setup=notify({"digest": "25:00"}),
    ),
    Case(
        "config-notify-digest-bad-offset",
        ("list",),
        "notify.digest: its offset must be Z or ±HH:MM",
        setup=notify({"digest": "07:30+25:00"}),
    ),
    Case(
        "config-notify-digest-a-number",
        ("list",),
        "notify.digest: must be a valid string",
        setup=notify({"digest": 730}),
    ),
    Case(
        "config-serve-public-url-with-credentials",
        ("list",),
        "serve.publicUrl: must not hold a user name or password",
        setup=config_json({"serve": {"publicUrl": f"https://me:{SECRET}@example.net"}}),
    ),
    Case(
        "config-serve-public-url-with-token-query",
        ("list",),
        "serve.publicUrl: must not hold a query",
        setup=config_json({"serve": {"publicUrl": f"https://example.net/?token={SECRET}"}}),
    ),
    Case(
        "config-serve-public-url-with-fragment",
        ("list",),
        "serve.publicUrl: must not hold a fragment",
        setup=config_json({"serve": {"publicUrl": "https://example.net/#top"}}),
    ),
    Case(
        "config-serve-public-url-with-path",
        ("list",),
        "serve.publicUrl: must not hold a path (/wrighty): the console is served at the root",
        setup=config_json({"serve": {"publicUrl": "https://example.net/wrighty"}}),
    ),
    Case(
        "config-serve-public-url-not-http",
        ("list",),
        "serve.publicUrl: must start with https://",
        setup=config_json({"serve": {"publicUrl": "ftp://example.net"}}),
    ),
    Case(
        "config-serve-public-url-no-host",
        ("list",),
        "serve.publicUrl: names no host",
        setup=config_json({"serve": {"publicUrl": "https:///items"}}),
    ),
    Case(
        "config-serve-public-url-bad-port",
        ("list",),
        "serve.publicUrl: is not a URL",
        setup=config_json({"serve": {"publicUrl": "https://example.net:99999"}}),
    ),
    Case(
        "config-serve-unknown-key",
        ("list",),
        "serve.publicURL: unknown key (allowed here: publicUrl)",
        setup=config_json({"serve": {"publicURL": "https://example.net"}}),
    ),
    Case(
        "config-notify-url-and-env",
        ("list",),
        "notify.urls.0: give url or env, one of the two",
        setup=notify({"urls": [{"url": f"json://h/{SECRET}", "env": "WRIGHTY_URL"}]}),
    ),
    Case(
        "config-notify-neither-url-nor-env",
        ("list",),
        "notify.urls.0: give url or env, one of the two",
        setup=notify({"urls": [{"events": ["done"]}]}),
    ),
    Case(
        "config-notify-url-not-a-string",
        ("list",),
        "notify.urls.0: must be an Apprise URL (a string) or an object with url or env (got 5)",
        setup=notify({"urls": [5]}),
    ),
    Case(
        "config-notify-urls-not-a-list",
        ("list",),
        "notify.urls: must be a valid list (got a string)",
        setup=notify({"urls": f"slack://{SECRET}"}),
    ),
    Case(
        "config-sandbox-unknown-string",
        ("list",),
        "worker.sandbox: must be 'none' (got the string \"bwrap\")",
        setup=config_json({"worker": {"sandbox": "bwrap"}}),
    ),
    Case(
        "config-verify-sandbox-unknown-string",
        ("list",),
        "verify.sandbox: must be 'agent' or 'none' (got the string \"bubblewrap\")",
        setup=config_json({"verify": {"sandbox": "bubblewrap"}}),
    ),
    Case(
        "config-verify-sandbox-no-kind",
        ("list",),
        "verify.sandbox.kind: is required",
        setup=config_json({"verify": {"sandbox": {"program": "bwrap"}}}),
    ),
    Case(
        "config-sandbox-unknown-kind",
        ("list",),
        "agents.claude.sandbox.kind: must be 'bubblewrap' (got a string)",
        setup=config_json({"agents": {"claude": {"sandbox": {"kind": "docker"}}}}),
    ),
    Case(
        "config-sandbox-relative-path",
        ("list",),
        "worker.sandbox.writable.0: must be an absolute path or start with ~/",
        setup=config_json({"worker": {"sandbox": {"kind": "bubblewrap", "writable": [".cache"]}}}),
    ),
    Case(
        "config-sandbox-network-lan",
        ("list",),
        "worker.sandbox.network: must be 'host' or 'none'",
        setup=config_json({"worker": {"sandbox": {"kind": "bubblewrap", "network": "lan"}}}),
    ),
    Case(
        "config-notify-env-not-a-name",
        ("list",),
        "notify.urls.0.env: must be a variable name",
        setup=notify({"urls": [{"env": f"{SECRET}-URL"}]}),
    ),
    Case(
        "config-notify-url-sink-unknown-key",
        ("list",),
        "notify.urls.0.token: unknown key (allowed here: events, reasonCodes, url, env)",
        setup=notify({"urls": [{"env": "WRIGHTY_URL", "token": SECRET}]}),
    ),
    Case(
        "config-notify-unknown-event",
        ("list",),
        "notify.events.0: must be 'needs-attention'",
        setup=notify({"events": ["stuck"], "command": ["true"]}),
    ),
    Case(
        "config-notify-sink-unknown-event",
        ("list",),
        "notify.urls.0.events.0: must be",
        setup=notify({"urls": [{"env": "WRIGHTY_URL", "events": ["finished"]}]}),
    ),
    Case(
        "config-notify-landing-event-misnamed",
        ("list",),
        "'ready-for-review', 'not-landed', 'retry-scheduled', 'done', 'landed'",
        setup=notify({"events": ["landing-needs-person"], "command": ["true"]}),
    ),
    Case(
        "config-notify-sink-landed-event-capitalised",
        ("list",),
        "notify.urls.0.events.0: must be",
        setup=notify({"urls": [{"env": "WRIGHTY_URL", "events": ["Landed"]}]}),
    ),
    Case(
        "config-notify-reason-codes-not-a-list",
        ("list",),
        "notify.command.reasonCodes: must be a valid list",
        setup=notify({"command": {"argv": ["true"], "reasonCodes": "billing"}}),
    ),
    Case(
        "config-notify-command-a-shell-string",
        ("list",),
        "notify.command: must be an argv (a list of strings) or an object with argv (got a string)",
        setup=notify({"command": f"notify-send {SECRET}"}),
    ),
    Case(
        "config-notify-command-empty-argv",
        ("list",),
        "notify.command.argv: is empty: name the program to run",
        setup=notify({"command": {"argv": []}}),
    ),
    Case(
        "config-notify-command-empty-list",
        ("config", "validate"),
        "1 problem, listed on standard output",
        stdout_allowed=True,
        setup=notify({"command": []}),
    ),
    Case(
        "notify-flush-refuses-an-empty-command",
        ("notify", "flush"),
        "notify.command: is empty: name the program to run",
        setup=notify({"command": []}),
    ),
    Case(
        "config-notify-command-empty-program",
        ("list",),
        "notify.command.0: is empty",
        setup=notify({"command": ["", SECRET]}),
    ),
    Case(
        "config-notify-command-nul",
        ("list",),
        "notify.command.argv.1: holds a NUL byte",
        setup=notify({"command": {"argv": ["notify", f"{SECRET}\x00"]}}),
    ),
    Case(
        "config-notify-command-timeout-past-bound",
        ("list",),
        "notify.command.timeoutSeconds: must be <= 600 (got 601)",
        setup=notify({"command": {"argv": ["true"], "timeoutSeconds": 601}}),
    ),
    Case(
        "config-notify-command-unknown-key",
        ("list",),
        "notify.command.shell: unknown key (allowed here: events, reasonCodes, argv, "
        "timeoutSeconds)",
        setup=notify({"command": {"argv": ["true"], "shell": True}}),
    ),
    # wrighty.json's verify section (docs/config.md#verify)
    Case(
        "config-verify-name-not-a-name",
        ("list",),
        "verify.checks.0.name: must be 1 to 64 letters, digits, '.', '_' or '-', starting with "
        'a letter or digit (got the string "run tests")',
        setup=verify({"checks": [check("run tests")]}),
    ),
    Case(
        "config-verify-name-starts-with-a-dash",
        ("worker", "start", "--once"),
        "verify.checks.0.name: must be 1 to 64 letters",
        setup=verify({"checks": [check("-x")]}),
    ),
    Case(
        "config-verify-name-too-long",
        ("list",),
        "verify.checks.0.name: must be 1 to 64 letters, digits, '.', '_' or '-', starting with "
        "a letter or digit (got a string)",
        setup=verify({"checks": [check("t" * 65)]}),
    ),
    Case(
        "config-verify-name-not-a-string",
        ("list",),
        "verify.checks.0.name: must be a valid string (got 7)",
        setup=verify({"checks": [{"name": 7, "argv": ["true"]}]}),
    ),
    Case(
        "config-verify-name-missing",
        ("list",),
        "verify.checks.0.name: is required",
        setup=verify({"checks": [{"argv": ["true"]}]}),
    ),
    Case(
        "config-verify-name-twice",
        ("list",),
        "verify.checks.1.name: 'tests' is already the name of verify.checks.0; give each check "
        "its own (an agent's checks run with verify.checks)",
        setup=verify({"checks": [check("tests"), check("tests")]}),
    ),
    Case(
        "config-verify-name-of-the-project-in-an-agent",
        ("worker", "start", "--once"),
        "agents.demo.verify.checks.0.name: 'lint' is already the name of verify.checks.0",
        setup=agent_verify({"checks": [check("lint")]}, verify={"checks": [check("lint")]}),
    ),
    Case(
        "config-verify-argv-empty-list",
        ("list",),
        'verify.checks.0.argv: is empty: name the program to run, as in ["python", "-m", '
        '"pytest", "-q"]',
        setup=verify({"checks": [{"name": "tests", "argv": []}]}),
    ),
    Case(
        "config-verify-argv-empty-program",
        ("list",),
        "verify.checks.0.argv.0: is empty: name the program to run",
        setup=verify({"checks": [check("tests", "", SECRET)]}),
    ),
    Case(
        "config-verify-argv-nul",
        ("list",),
        "verify.checks.0.argv.2: holds a NUL byte",
        setup=verify({"checks": [check("tests", "pytest", "-k", f"{SECRET}\x00")]}),
    ),
    Case(
        "config-verify-agent-argv-nul",
        ("list",),
        "agents.demo.verify.checks.0.argv.0: holds a NUL byte",
        setup=agent_verify({"checks": [check("t", "py\x00test")]}),
    ),
    Case(
        "config-verify-argv-a-shell-string",
        ("list",),
        "verify.checks.0.argv: must be a valid list (got a string)",
        setup=verify({"checks": [{"name": "t", "argv": f"curl -H {SECRET}"}]}),
    ),
    Case(
        "config-verify-argv-not-strings",
        ("list",),
        "verify.checks.0.argv.1: must be a valid string (got 3)",
        setup=verify({"checks": [{"name": "t", "argv": ["pytest", 3]}]}),
    ),
    Case(
        "config-verify-argv-missing",
        ("list",),
        "verify.checks.0.argv: is required",
        setup=verify({"checks": [{"name": "t"}]}),
    ),
    Case(
        "config-verify-timeout-zero",
        ("list",),
        "verify.checks.0.timeoutMinutes: must be >= 1/60 (one second) (got 0)",
        setup=verify({"checks": [check("t", timeoutMinutes=0)]}),
    ),
    Case(
        "config-verify-timeout-past-seven-days",
        ("list",),
        "verify.checks.0.timeoutMinutes: must be <= 10080 (got 10081)",
        setup=verify({"checks": [check("t", timeoutMinutes=10081)]}),
    ),
    Case(
        "config-verify-timeout-a-string",
        ("list",),
        'verify.checks.0.timeoutMinutes: must be a valid number (got the string "20m")',
        setup=verify({"checks": [check("t", timeoutMinutes="20m")]}),
    ),
    Case(
        "config-verify-on-base-a-string",
        ("list",),
        'verify.checks.0.onBase: must be a valid boolean (got the string "no")',
        setup=verify({"checks": [check("t", onBase="no")]}),
    ),
    Case(
        "config-verify-on-base-a-number",
        ("list",),
        "verify.checks.0.onBase: must be a valid boolean (got 0)",
        setup=verify({"checks": [check("t", onBase=0)]}),
    ),
    Case(
        "validate-verify-on-base-a-string",
        ("config", "validate"),
        "1 problem, listed on standard output",
        stdout_allowed=True,
        setup=verify({"checks": [check("t", onBase="no")]}),
    ),
    Case(
        "config-verify-fix-turns-negative",
        ("list",),
        "verify.maxFixTurns: must be >= 0 (got -1)",
        setup=verify({"checks": [check("t")], "maxFixTurns": -1}),
    ),
    Case(
        "config-verify-fix-turns-past-bound",
        ("list",),
        "verify.maxFixTurns: must be <= 10 (got 11)",
        setup=verify({"maxFixTurns": 11}),
    ),
    Case(
        "config-verify-fix-turns-a-fraction",
        ("list",),
        "verify.maxFixTurns: must be a valid integer",
        setup=verify({"maxFixTurns": 1.5}),
    ),
    Case(
        "config-verify-feedback-bytes-below",
        ("list",),
        "verify.feedbackBytes: must be >= 1000 (got 999)",
        setup=verify({"feedbackBytes": 999}),
    ),
    Case(
        "config-verify-feedback-bytes-past-bound",
        ("list",),
        "verify.feedbackBytes: must be <= 100000 (got 100001)",
        setup=verify({"feedbackBytes": 100001}),
    ),
    Case(
        "config-verify-too-many-checks",
        ("list",),
        "verify.checks: has 21 checks: at most 20",
        setup=verify({"checks": checks("c", 21)}),
    ),
    Case(
        "config-verify-too-many-with-an-agents",
        ("worker", "start", "--once"),
        "agents.demo.verify.checks: with the 15 of verify.checks, the agent's items would run 21 "
        "checks: at most 20",
        setup=agent_verify({"checks": checks("a", 6)}, verify={"checks": checks("p", 15)}),
    ),
    Case(
        "config-verify-not-an-object",
        ("list",),
        "verify: must be an object (got a list)",
        setup=verify([check("t")]),
    ),
    Case(
        "config-verify-checks-not-a-list",
        ("list",),
        "verify.checks: must be a valid list (got an object)",
        setup=verify({"checks": check("t")}),
    ),
    Case(
        "config-verify-unknown-key",
        ("list",),
        "verify.check: unknown key (allowed here: checks, maxFixTurns, feedbackBytes, sandbox)",
        setup=verify({"check": [check("t")]}),
    ),
    Case(
        "config-verify-check-unknown-key",
        ("list",),
        "verify.checks.0.shell: unknown key (allowed here: name, argv, timeoutMinutes, onBase)",
        setup=verify({"checks": [check("t", shell=True)]}),
    ),
    Case(
        "config-verify-agent-fix-turns",
        ("list",),
        "agents.demo.verify.maxFixTurns: unknown key (allowed here: checks); maxFixTurns is the "
        "project's: set verify.maxFixTurns",
        setup=agent_verify({"checks": [check("t")], "maxFixTurns": 1}),
    ),
    Case(
        "config-verify-problems-listed",
        ("config", "validate"),
        "2 problems, listed on standard output",
        stdout_allowed=True,
        setup=verify({"checks": [check("t", ""), check("t")]}),
    ),
    Case(
        "worker-check-program-missing",
        ("worker", "start", "--once"),
        "check 'lint': program 'no-such-linter' not found on PATH; install it or change "
        "verify.checks.1.argv in wrighty.json",
        setup=agent_verify(
            {"checks": []}, verify={"checks": [check("ok"), check("lint", "no-such-linter")]}
        ),
    ),
    Case(
        "worker-agent-check-program-missing",
        ("worker", "start", "--once"),
        "check 'a': program '/nonexistent/check' not found; install it or change "
        "agents.demo.verify.checks.0.argv in wrighty.json (and 1 more; `wrighty config "
        "validate` lists them)",
        setup=agent_verify({"checks": [check("a", "/nonexistent/check"), check("b", "no-such-b")]}),
    ),
    Case(
        "config-notify-max-attempts-zero",
        ("list",),
        "notify.maxAttempts: must be >= 1 (got 0)",
        setup=notify({"maxAttempts": 0}),
    ),
    Case(
        "config-notify-retention-past-bound",
        ("list",),
        "notify.retentionHours: must be <=",
        setup=notify({"retentionHours": 1e9}),
    ),
    Case(
        "config-notify-unknown-key",
        ("list",),
        "notify.sinks: unknown key (allowed here: urls, command, events, maxAttempts, "
        "retentionHours, digest)",
        setup=notify({"sinks": []}),
    ),
    Case(
        "config-notify-not-an-object",
        ("list",),
        "notify: must be an object (got a list)",
        setup=config_json({"notify": [f"slack://{SECRET}"]}),
    ),
    Case(
        "config-notify-age-threshold-zero",
        ("status",),
        "status.maxNotifyAgeSeconds: must be > 0 (got 0)",
        setup=config_json({"status": {"maxNotifyAgeSeconds": 0}}),
    ),
    Case(
        "config-notify-age-threshold-not-a-number",
        ("status",),
        "status.maxNotifyAgeSeconds: must be a valid number",
        setup=config_json({"status": {"maxNotifyAgeSeconds": "1h"}}),
    ),
    Case(
        "validate-notify-problems",
        ("config", "validate"),
        "3 problems",
        stdout_allowed=True,
        setup=notify(
            {
                "urls": [f"slack://{SECRET}", {"url": f"json://h/{API_KEY}", "env": "X"}],
                "command": ["", SECRET],
            }
        ),
    ),
    Case(
        "worker-refuses-a-bad-notify-config",
        ("worker", "start", "--once"),
        "notify.urls.0: Apprise cannot read this bogus:// URL",
        setup=notify({"urls": [f"bogus://{SECRET}"]}),
    ),
    Case(
        "config-duplicate-key",
        ("list",),
        'duplicate key "worker"',
        setup=config('{"worker": {}, "worker": {}}'),
    ),
    Case(
        "config-100000-levels",
        ("list",),
        "nested more than 32 levels",
        setup=config("[" * 100_000 + "]" * 100_000),
    ),
    Case(
        "config-5000-digits",
        ("list",),
        "a number has 5000 digits",
        setup=config('{"worker": {"concurrency": ' + "9" * 5000 + "}}"),
    ),
    Case(
        "config-nan",
        ("list",),
        "NaN is not a JSON number",
        setup=config('{"worker": {"leaseSeconds": NaN}}'),
    ),
    Case(
        "config-infinity",
        ("list",),
        "Infinity is not a JSON number",
        setup=config('{"worker": {"leaseSeconds": Infinity}}'),
    ),
    Case(
        "config-latin1",
        ("list",),
        "is not UTF-8 text (byte 0xe9",
        setup=config(b'{"worker": {"label": "caf\xe9"}}'),
    ),
    Case(
        "config-future-version",
        ("list",),
        "this wrighty understands version 1 (got 2)",
        setup=config_json({"schemaVersion": 2}),
    ),
    Case(
        "config-unknown-default-agent",
        ("list",),
        "worker.defaultAgent: unknown agent",
        setup=config_json({"worker": {"defaultAgent": "robot"}}),
    ),
    Case(
        "config-bad-agent-name",
        ("list",),
        "agent names use lowercase letters",
        setup=config_json({"agents": {"Bad Name": {"adapter": "command", "command": ["x"]}}}),
    ),
    Case(
        "config-unknown-adapter",
        ("list",),
        "agents.helper.adapter: must be 'claude', 'codex', 'gemini' or 'command' (got a string)",
        setup=config_json({"agents": {"helper": {"adapter": "aider"}}}),
    ),
    Case(
        "config-command-agent-without-command",
        ("list",),
        "agents.tool.command: is required",
        setup=config_json({"agents": {"tool": {"adapter": "command"}}}),
    ),
    Case(
        "config-label-with-escape",
        ("list",),
        "worker.label",
        setup=config_json({"worker": {"label": "\x1b[2Jx"}}),
    ),
    Case(
        "config-open-circuit-threshold-negative",
        ("status",),
        "status.maxOpenCircuits: must be >= 0",
        setup=config_json({"status": {"maxOpenCircuits": -1}}),
    ),
    Case(
        "config-open-circuit-threshold-not-a-number",
        ("status",),
        "status.maxOpenCircuits",
        setup=config_json({"status": {"maxOpenCircuits": "few"}}),
    ),
    Case(
        "config-account-with-a-space",
        ("list",),
        "agents.claude.account",
        setup=config_json({"agents": {"claude": {"account": "team account"}}}),
    ),
    Case(
        "config-account-not-a-string",
        ("list",),
        "agents.claude.account",
        setup=config_json({"agents": {"claude": {"account": 42}}}),
    ),
    Case(
        "config-account-too-long",
        ("list",),
        "agents.claude.account",
        setup=config_json({"agents": {"claude": {"account": "a" * 81}}}),
    ),
    Case(
        "config-review-wait-threshold-zero",
        ("status",),
        "status.maxReviewWaitSeconds: must be > 0 (got 0)",
        setup=config_json({"status": {"maxReviewWaitSeconds": 0}}),
    ),
    Case(
        "config-review-wait-threshold-not-a-number",
        ("status",),
        "status.maxReviewWaitSeconds: must be a valid number",
        setup=config_json({"status": {"maxReviewWaitSeconds": "1h"}}),
    ),
    Case(
        "config-review-wait-past-bound",
        ("status",),
        "status.maxReviewWaitSeconds: must be <= 3.1536e+07 (got 1e+308)",
        setup=config_json({"status": {"maxReviewWaitSeconds": 1e308}}),
    ),
    Case(
        "config-review-wait-misspelt",
        ("status",),
        "status.maxReviewWait: unknown key",
        setup=config_json({"status": {"maxReviewWait": 3600}}),
    ),
    Case(
        "config-queue-wait-past-bound",
        ("list",),
        "status.maxQueueWaitSeconds: must be <=",
        setup=config_json({"status": {"maxQueueWaitSeconds": 1e308}}),
    ),
    Case(
        "config-secret-where-a-list-goes",
        ("list",),
        "agents.claude.args: must be a valid list (got a string)",
        setup=config_json({"agents": {"claude": {"args": API_KEY}}}),
    ),
    Case(
        "config-secret-env-not-a-string",
        ("list",),
        "agents.claude.env.TOKEN",
        setup=config_json({"agents": {"claude": {"env": {"TOKEN": [API_KEY]}}}}),
    ),
    Case(
        "config-nul-in-an-argument",
        ("list",),
        "agents.claude.args.0: holds a NUL byte",
        setup=config_json({"agents": {"claude": {"args": ["a\x00b"]}}}),
    ),
    Case(
        "config-env-name-with-equals",
        ("list",),
        'agents.claude.env["A=B"]: is not an environment variable name',
        setup=config_json({"agents": {"claude": {"env": {"A=B": "x"}}}}),
    ),
    Case(
        "config-store-mysql",
        ("list",),
        "unsupported store URL scheme",
        setup=config_json({"store": {"url": f"mysql://u:{SECRET}@db/x"}}),
    ),
    Case(
        "config-store-pool-size-zero",
        ("list",),
        "store.poolSize: ",
        setup=config_json({"store": {"url": "sqlite:///.wrighty/wrighty.db", "poolSize": 0}}),
    ),
    Case(
        "config-store-pool-size-huge",
        ("list",),
        "store.poolSize: ",
        setup=config_json({"store": {"url": "sqlite:///.wrighty/wrighty.db", "poolSize": 1000}}),
    ),
    Case(
        "config-store-pool-size-not-a-number",
        ("list",),
        "store.poolSize: ",
        setup=config_json({"store": {"url": "sqlite:///.wrighty/wrighty.db", "poolSize": "2"}}),
    ),
    Case(
        "config-store-pooler-unknown",
        ("list",),
        "store.pooler: ",
        setup=config_json({"store": {"url": "sqlite:///.wrighty/wrighty.db", "pooler": "bouncy"}}),
    ),
    Case(
        "config-store-listen-url-for-sqlite",
        ("list",),
        "store.listenUrl: is for a PostgreSQL store",
        setup=config_json(
            {
                "store": {
                    "url": "sqlite:///.wrighty/wrighty.db",
                    "listenUrl": "postgresql://postgres@127.0.0.1/test",
                }
            }
        ),
    ),
    Case(
        "config-store-listen-url-other-database",
        ("list",),
        "store.listenUrl: names database 'other', but the store is in 'test'",
        setup=config_json(
            {
                "store": {
                    "url": "postgresql://postgres@127.0.0.1:6432/test",
                    "listenUrl": f"postgresql://postgres:{SECRET}@127.0.0.1:5432/other",
                }
            }
        ),
    ),
    Case(
        "config-store-listen-url-not-postgresql",
        ("list",),
        "store.listenUrl: must be a postgresql:// URL",
        setup=config_json(
            {
                "store": {
                    "url": "postgresql://postgres@127.0.0.1:6432/test",
                    "listenUrl": f"mysql://u:{SECRET}@db/test",
                }
            }
        ),
    ),
    Case(
        "validate-store-mysql",
        ("config", "validate"),
        "1 problem",
        stdout_allowed=True,
        setup=config_json({"store": {"url": f"mysql://u:{SECRET}@db/x"}}),
    ),
    Case(
        "validate-latin1",
        ("config", "validate"),
        "is not UTF-8 text",
        setup=config(b'{"worker": {"label": "caf\xe9"}}'),
    ),
    Case(
        "validate-100000-levels",
        ("config", "validate"),
        "1 problem",
        stdout_allowed=True,
        setup=config("{" + '"a":{' * 50_000 + "}" * 50_001),
    ),
    Case(
        "validate-many-problems",
        ("config", "validate"),
        "3 problems",
        stdout_allowed=True,
        setup=config_json({"worker": {"pollSecs": 1, "concurrency": 0, "leaseSeconds": -1}}),
    ),
    Case("validate-dev-zero", ("config", "validate", "/dev/zero"), "is a character device"),
    Case(
        "init-keeps-no-invalid-config",
        ("init",),
        "worker.leaseSeconds: must be > 0",
        setup=config_json({"worker": {"leaseSeconds": 0}}),
    ),
    Case("init-store-mysql", ("init", "--store", "mysql://x/y"), "unsupported store URL scheme"),
    # wrighty.json that is not a file: said what it is, by init and by every command
    *(
        Case(f"{name}-{command[0]}", command, says, setup=with_setups(no_config, setup))
        for name, setup, says in (
            (
                "config-link-loop",
                link("wrighty.json", "wrighty.json"),
                "a symbolic link that loops",
            ),
            (
                "config-dangling-link",
                link("wrighty.json", "gone.json"),
                "a symbolic link to 'gone.json', which does not exist",
            ),
            ("config-a-folder", folder("wrighty.json"), "is a directory, not a regular file"),
            (
                "config-named-fifo",
                fifo("wrighty.json"),
                "is a FIFO (named pipe), not a regular file",
            ),
        )
        for command in (("init",), ("list",), ("worker", "start", "--once"), ("config", "validate"))
    ),
    Case(
        "init-force-over-a-folder",
        ("init", "--force"),
        "wrighty.json: is a directory, not a regular file; move it away",
        setup=with_setups(no_config, folder("wrighty.json")),
    ),
    # Values read back from the store (docs/storage.md, "A row that does not read").
    Case(
        "stored-queued-at-not-a-time",
        ("show", "1"),
        "item 1: its queued_at does not read ('yesterday' is not a time)",
        setup=stored("UPDATE items SET queued_at = 'yesterday'"),
    ),
    Case(
        "stored-created-at-empty-text",
        ("show", "1"),
        "item 1: its created_at does not read",
        setup=stored("UPDATE items SET created_at = ''"),
    ),
    Case(
        "stored-time-without-zone",
        ("show", "1"),
        "item 1: its updated_at does not read",
        setup=stored("UPDATE items SET updated_at = '2026-01-01T00:00:00'"),
    ),
    Case(
        "stored-time-with-escapes",
        ("show", "1"),
        "its queued_at does not read ('\\x1b[2J",
        setup=stored("UPDATE items SET queued_at = char(27) || '[2J' || char(155) || 'x'"),
    ),
    Case(
        "stored-priority-below",
        ("show", "1"),
        "item 1: its priority does not read (-3 is not",
        setup=stored("UPDATE items SET priority = -3"),
    ),
    Case(
        "stored-priority-above",
        ("requeue", "1", "--fresh"),
        "item 1: its priority does not read (7 is not",
        setup=stored("UPDATE items SET priority = 7"),
    ),
    Case(
        "stored-state-unknown",
        ("cancel", "1"),
        "item 1: its state does not read ('paused'",
        setup=stored("UPDATE items SET state = 'paused'"),
    ),
    Case(
        "stored-reason-code-odd",
        ("show", "1"),
        "item 1: its reason_code does not read",
        setup=stored("UPDATE items SET reason_code = 'Bad Code!'"),
    ),
    Case(
        "stored-budget-huge",
        ("edit", "1", "--priority", "1"),
        "item 1: its max_cost_usd does not read (1e+308 is not a number",
        setup=stored("UPDATE items SET max_cost_usd = 1e308"),
    ),
    Case(
        "stored-budget-negative",
        ("show", "1"),
        "item 1: its max_cost_usd does not read",
        setup=stored("UPDATE items SET max_cost_usd = -1"),
    ),
    Case(
        "stored-retries-negative",
        ("show", "1"),
        "item 1: its crash_retries does not read",
        setup=stored("UPDATE items SET crash_retries = -1"),
    ),
    Case(
        "config-sources-not-an-object",
        ("list",),
        "sources: ",
        setup=config_json({"sources": [github()]}),
    ),
    Case(
        "config-source-kind-unknown",
        ("list",),
        "sources.trackers.0",
        setup=sources(github(kind="jira")),
    ),
    Case(
        "config-source-without-repo",
        ("list",),
        "sources.trackers.0.repo: ",
        setup=sources({"kind": "github", "labels": ["wrighty"]}),
    ),
    Case(
        "config-source-repo-without-owner",
        ("list",),
        "sources.trackers.0.repo: ",
        setup=sources(github(repo="widgets")),
    ),
    Case(
        "config-source-without-labels",
        ("list",),
        "sources.trackers.0.labels: ",
        setup=sources(github(labels=[])),
    ),
    Case(
        "config-source-label-with-a-comma",
        ("list",),
        "is not a label: 1 to 50 printable characters without a comma",
        setup=sources(github(labels=["a,b"])),
    ),
    Case(
        "config-source-token-env-not-a-name",
        ("list",),
        "sources.trackers.0.tokenEnv: ",
        setup=sources(github(tokenEnv=f"ghp_{SECRET}-x")),
    ),
    Case(
        "config-source-api-url-plain-http-elsewhere",
        ("list",),
        "the token would cross the network in clear",
        setup=sources(github(apiUrl="http://github.example.com")),
    ),
    Case(
        "config-source-api-url-with-credentials",
        ("list",),
        "must not hold a user name or password",
        setup=sources(github(apiUrl=f"https://me:{SECRET}@api.github.com")),
    ),
    Case(
        "config-source-api-url-not-a-url",
        ("list",),
        "must be an https:// URL with a host",
        setup=sources(github(apiUrl="api.github.com")),
    ),
    Case(
        "config-source-priority-not-a-priority",
        ("list",),
        "'urgent': 'P7' is not a priority: give P0 to P3",
        setup=sources(github(priorityLabels={"urgent": "P7"})),
    ),
    Case(
        "config-source-unknown-agent",
        ("list",),
        "sources.trackers[0].agent: unknown agent 'nobody'",
        setup=sources(github(agent="nobody")),
    ),
    Case(
        "config-source-two-for-one-repo",
        ("list",),
        "one source per repository",
        setup=sources(github(), github(name="again", labels=["other"])),
    ),
    Case(
        "config-source-two-with-one-name",
        ("list",),
        "'same' is also sources.trackers[0]'s name",
        setup=sources(github(name="same"), github(name="same", repo="acme/other")),
    ),
    Case(
        "config-source-unknown-key",
        ("list",),
        "sources.trackers.0.token: ",
        setup=sources(github(token=SECRET)),
    ),
    Case(
        "config-sources-poll-zero",
        ("list",),
        "sources.pollSeconds: ",
        setup=sources(github(), pollSeconds=0),
    ),
    Case(
        "config-source-status-comments-not-a-bool",
        ("list",),
        "sources.trackers.0.statusComments: ",
        setup=sources(github(statusComments="yes")),
    ),
    Case(
        "config-source-answers-not-a-bool",
        ("list",),
        "sources.trackers.0.answers: ",
        setup=sources(github(answers=1)),
    ),
    Case(
        "config-source-trusted-author-not-a-login",
        ("list",),
        "is not a GitHub login",
        setup=sources(github(trustedAuthors=["alice", "bob; rm -rf /"])),
    ),
    Case(
        "config-source-trusted-authors-not-a-list",
        ("list",),
        "sources.trackers.0.trustedAuthors: ",
        setup=sources(github(trustedAuthors="alice")),
    ),
    Case(
        "config-source-trust-collaborators-not-a-bool",
        ("list",),
        "sources.trackers.0.trustCollaborators: ",
        setup=sources(github(trustCollaborators="no")),
    ),
    Case(
        "config-completion-github-pr-nowhere",
        ("list",),
        'completion.pullRequest: is required when completion.integrate is "github-pr"',
        setup=completion({"integrate": "github-pr"}),
    ),
    Case(
        "config-completion-github-pr-two-sources",
        ("list",),
        "completion.pullRequest: is required",
        setup=config_json(
            {
                "completion": {"integrate": "github-pr"},
                "sources": {"trackers": [github(), github(repo="acme/other", name="other")]},
            }
        ),
    ),
    Case(
        "config-completion-pull-request-plain-http-elsewhere",
        ("list",),
        "the token would cross the network in clear",
        setup=completion(
            {
                "integrate": "github-pr",
                "pullRequest": {"repo": "acme/widgets", "apiUrl": "http://github.example.com"},
            }
        ),
    ),
    Case(
        "config-completion-pull-request-repo-bad",
        ("list",),
        "completion.pullRequest.repo: ",
        setup=completion({"integrate": "github-pr", "pullRequest": {"repo": "../../etc"}}),
    ),
    Case(
        "config-completion-pull-request-unknown-key",
        ("list",),
        "completion.pullRequest.token: ",
        setup=completion(
            {"integrate": "github-pr", "pullRequest": {"repo": "acme/widgets", "token": SECRET}}
        ),
    ),
    Case(
        "config-completion-pull-request-draft-not-a-bool",
        ("list",),
        "completion.pullRequest.draft: ",
        setup=completion(
            {"integrate": "github-pr", "pullRequest": {"repo": "acme/widgets", "draft": "no"}}
        ),
    ),
    Case("sources-sync-none-configured", ("sources", "sync"), "no sources are configured"),
    Case(
        "sources-sync-unknown-name",
        ("sources", "sync", "nope"),
        "no source named 'nope' (known: acme/widgets)",
        setup=sources(github()),
    ),
    Case(
        "sources-sync-token-unset",
        ("sources", "sync"),
        "source acme/widgets: $WIDGETS_TOKEN is not set",
        setup=sources(github(tokenEnv="WIDGETS_TOKEN", apiUrl="http://127.0.0.1:9")),
    ),
    Case(
        "sources-sync-token-blank",
        ("sources", "sync"),
        "source acme/widgets: $WIDGETS_TOKEN is not set",
        setup=sources(github(tokenEnv="WIDGETS_TOKEN", apiUrl="http://127.0.0.1:9")),
        env=("WIDGETS_TOKEN= ",),
    ),
    Case(
        "sources-json-before-sync",
        ("sources", "--json", "sync"),
        "--json goes after the subcommand",
        setup=sources(github()),
    ),
]


# Of the cases, those that also run on the installed executable itself.
SAMPLE_EVERY = 8
SAMPLE = [case for n, case in enumerate(CASES) if n % SAMPLE_EVERY == 0 or case.env]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An initialised project, copied for each case."""
    project = tmp_path_factory.mktemp("template") / "project"
    (project / ".git").mkdir(parents=True)
    made = run(project, ("init",))
    assert made.returncode == 0, made.stderr
    return project


@pytest.fixture(scope="module")
def shim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The fork server's `wrighty` (tests/helpers.py fork_server)."""
    with fork_server(tmp_path_factory.mktemp("corpus-server")) as path:
        yield str(path)


def test_the_corpus_is_large_and_its_names_unique() -> None:
    names = [case.name for case in CASES]
    assert len(names) == len(set(names))
    assert len(CASES) >= 70


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_bad_input_gets_one_clear_line_and_changes_nothing(
    case: Case, template: Path, tmp_path: Path, shim: str
) -> None:
    # The fork server's shim hands its standard input on, and has none to hand on when closed.
    _refused_cleanly(case, template, tmp_path, None if case.stdin_closed else shim)


@pytest.mark.slow
@pytest.mark.parametrize("case", SAMPLE, ids=[case.name for case in SAMPLE])
def test_bad_input_on_the_installed_executable(case: Case, template: Path, tmp_path: Path) -> None:
    _refused_cleanly(case, template, tmp_path, None)


def _refused_cleanly(case: Case, template: Path, tmp_path: Path, command: str | None) -> None:
    project = tmp_path / "project"
    shutil.copytree(template, project)
    if case.setup is not None:
        chosen = SETUP_COMMAND.set(command)
        try:
            case.setup(project)
        finally:
            SETUP_COMMAND.reset(chosen)
    before = snapshot(project)
    result = run(
        project,
        case.args,
        stdin=case.stdin,
        env=case.env,
        command=command,
        stdin_closed=case.stdin_closed,
    )
    stdout = result.stdout.decode("utf-8", "replace")
    stderr = result.stderr.decode("utf-8", "replace")
    assert result.returncode == 2, f"exit {result.returncode}\n{stdout}\n{stderr}"
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("wrighty: "), stderr
    assert case.says in lines[0]
    assert "Traceback" not in stderr
    if not case.stdout_allowed:
        assert stdout == ""
    for output in (stdout, stderr):
        assert not CONTROL.search(output), f"a raw control character: {output!r}"
        assert SECRET not in output
        assert API_KEY not in output
    assert snapshot(project) == before, "a refused command changed files on disk"


# The landing's completion keys of the wrong type (docs/landing.md#settings): `config
# validate` refuses each (the corpus's one stderr line, exit 2) and names its JSON path.
LANDING_KEYS = (("update", 7), ("squash", "yes"), ("stack", 1), ("reviewAfterFix", False))


@pytest.mark.parametrize(("key", "value"), LANDING_KEYS, ids=[key for key, _ in LANDING_KEYS])
def test_config_validate_names_a_landing_keys_path(
    key: str, value: object, template: Path, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    shutil.copytree(template, project)
    completion({key: value})(project)
    case = Case(f"validate-{key}", ("config", "validate"), "1 problem", stdout_allowed=True)
    _refused_cleanly(case, project, tmp_path / "again", None)
    shown = run(project, ("config", "validate"))
    assert shown.returncode == 2
    assert shown.stdout.decode().startswith(f"completion.{key}: ")
