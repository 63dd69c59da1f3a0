"""The real `wrighty inbox`, in a real terminal: tmux runs the installed command in a pane of
80x24 on a store with an item in every state, the test types keys into it and reads the pane's
text back. Without a terminal the command refuses, in one line.

The command reads the real clock, not the seed's: nothing here depends on the time."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest
from rich.cells import cell_len

from tests.conftest import FakeClock
from tests.helpers import installed_wrighty, run_installed
from tests.inbox.conftest import make_project
from tests.inbox.seed import Seeded, open_project_store, seed
from wrighty.domain.states import ItemState
from wrighty.inbox.app import READ_ONLY_REFUSAL

WIDTH, HEIGHT = 80, 24
WAIT_SECONDS = 20.0  # the longest any one thing may take to show
POLL_SECONDS = 0.1
# The board's rows: a section tag, the item's id, its priority.
ROW = re.compile(r"^ (ATTN|RETRY|RUN|HELD|WAIT) +(\d+) +P\d ")


def tmux_or_skip() -> str:
    """The tmux executable; skip without one (fail with WRIGHTY_REQUIRE_TMUX=1)."""
    found = shutil.which("tmux")
    if found is None:
        reason = "tmux is not installed"
        if os.environ.get("WRIGHTY_REQUIRE_TMUX") == "1":
            pytest.fail(f"{reason}, and WRIGHTY_REQUIRE_TMUX=1 requires it")
        pytest.skip(f"{reason}; install tmux to run the inbox in a real terminal")
    return found


@dataclass
class Terminal:
    """One pane of a private tmux server (its socket a file of the test's), running one
    command."""

    tmux: str
    socket: Path
    target: str = "inbox"
    size: tuple[int, int] = (WIDTH, HEIGHT)
    pids: list[int] = field(default_factory=list)  # the server's and the pane's

    def run(self, *args: str, env: dict[str, str] | None = None) -> str:
        done = subprocess.run(
            [self.tmux, "-S", str(self.socket), "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=WAIT_SECONDS,
            check=False,
        )
        assert done.returncode == 0, f"tmux {' '.join(args)}: {done.stderr}"
        return done.stdout

    def start(self, command: list[str], *, cwd: Path, env: dict[str, str]) -> None:
        """The server, told its terminal type and to keep a pane whose command has exited
        (so its exit status can be read), then the pane, WIDTH by HEIGHT."""
        # tmux sets TERM in a pane from default-terminal, whatever -e says
        self.run(
            *("set-option", "-g", "default-terminal", env["TERM"], ";"),
            *("set-option", "-g", "remain-on-exit", "on", ";"),
            *(
                "new-session",
                "-d",
                "-s",
                self.target,
                "-x",
                str(self.size[0]),
                "-y",
                str(self.size[1]),
            ),
            *("-c", str(cwd)),
            *(arg for name in ("TZ", "XDG_CONFIG_HOME") for arg in ("-e", f"{name}={env[name]}")),
            *command,
            env=env,
        )
        self.pids = [int(pid) for pid in self.pane("#{pid} #{pane_pid}").split()]

    def pane(self, format_: str) -> str:
        return self.run("display-message", "-p", "-t", self.target, format_).strip()

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", self.target)

    def send(self, *keys: str) -> None:
        self.run("send-keys", "-t", self.target, *keys)

    def wait_for(self, shown: Callable[[str], bool], what: str) -> str:
        """The screen, as soon as ``shown`` holds for it and it has settled: the same on two
        captures in a row (tmux reads a frame of the app's in pieces, and a capture between
        two of them shows some of the frame; polled; fails after WAIT_SECONDS)."""
        deadline = time.monotonic() + WAIT_SECONDS
        last = None
        while True:
            screen = self.screen()
            if screen == last and shown(screen):
                return screen
            if time.monotonic() > deadline:
                pytest.fail(f"the pane never showed {what}; it shows:\n{screen}")
            last = screen
            time.sleep(POLL_SECONDS)

    def wait_for_text(self, *texts: str) -> str:
        return self.wait_for(lambda screen: all(t in screen for t in texts), repr(texts))

    def wait_for_exit(self) -> int:
        """The pane's command's exit status, once it has exited.

        tmux marks the pane dead when its terminal closes, and learns the status when its
        SIGCHLD handler reaps the command. The Debian build closes the terminal's utmp entry
        through libutempter, which forks a helper with SIGCHLD set to SIG_DFL for a moment:
        a command that exits in that moment leaves no signal behind, and stays a zombie until
        the next SIGCHLD. `run-shell true` is one: its job's exit makes tmux reap them all."""
        deadline = time.monotonic() + WAIT_SECONDS
        while True:
            dead, status, signal = self.pane(
                "#{pane_dead}|#{pane_dead_status}|#{pane_dead_signal}"
            ).split("|")
            if signal:
                pytest.fail(f"the command was killed by signal {signal}:\n{self.screen()}")
            if status:
                return int(status)
            if time.monotonic() > deadline:
                pytest.fail(f"the command did not exit; the pane shows:\n{self.screen()}")
            if dead == "1":
                self.run("run-shell", "true")
            else:
                time.sleep(POLL_SECONDS)

    def kill(self) -> None:
        """The server and everything in it, gone (killed outright if they linger)."""
        subprocess.run(
            [self.tmux, "-S", str(self.socket), "kill-server"],
            capture_output=True,
            timeout=WAIT_SECONDS,
            check=False,
        )
        deadline = time.monotonic() + 5
        lingering = [pid for pid in self.pids if _alive(pid)]
        while lingering and time.monotonic() < deadline:
            time.sleep(0.01)
            lingering = [pid for pid in lingering if _alive(pid)]
        for pid in lingering:
            with contextlib.suppress(psutil.NoSuchProcess):
                psutil.Process(pid).kill()


def _alive(pid: int) -> bool:
    """Running, not exited (an exited daemon stays a zombie until whoever adopted it reaps
    it, which may take a while)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@dataclass(frozen=True)
class Inbox:
    project: Path
    ids: Seeded
    terminal: Terminal


@pytest.fixture
def start_inbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: FakeClock
) -> Iterator[Callable[..., Inbox]]:
    """Start `wrighty inbox [args]` in a pane, on a seeded project (once a test); its server
    is killed afterwards, whatever happened. The server's socket is in a directory of its own
    with a short path (a socket's path has a length limit that tmp_path may pass), removed
    afterwards: tmux leaves its socket behind when it exits."""
    tmux = tmux_or_skip()
    terminals: list[Terminal] = []
    sockets = tempfile.TemporaryDirectory(prefix="wrighty-tmux-")

    def start(*args: str, size: tuple[int, int] = (WIDTH, HEIGHT)) -> Inbox:
        project = make_project(tmp_path / "project", monkeypatch)
        ids = seed(project, clock)
        env = {
            name: value
            for name, value in os.environ.items()
            # COLUMNS and LINES would override the pane's size for the app (shutil's reading)
            if not name.startswith(("WRIGHTY_", "TMUX")) and name not in ("COLUMNS", "LINES")
        }
        env |= {"TERM": "xterm-256color", "TZ": "UTC"}  # XDG_CONFIG_HOME: the suite's own
        terminal = Terminal(tmux, Path(sockets.name) / f"tmux-{len(terminals)}", size=size)
        terminals.append(terminal)
        terminal.start([installed_wrighty(), "inbox", *args], cwd=project, env=env)
        return Inbox(project, ids, terminal)

    try:
        yield start
    finally:
        for terminal in terminals:
            terminal.kill()
        sockets.cleanup()


def lines(screen: str) -> list[str]:
    return screen.removesuffix("\n").split("\n")


def board(screen: str) -> list[tuple[str, int]]:
    """The board's rows on the screen: each one's section tag and item id."""
    return [(m[1], int(m[2])) for line in lines(screen) if (m := ROW.match(line))]


def detail_heading(screen: str) -> str | None:
    """The detail pane's first line (`Item N  state  generation G`)."""
    return next((line.strip() for line in lines(screen) if re.match(r"^ Item \d+  ", line)), None)


def message_line(screen: str) -> str:
    """The line above the footer."""
    return lines(screen)[HEIGHT - 2].strip()


def showing_board(screen: str) -> bool:
    """The eight rows, the selected item's detail and the footer's keys, all drawn."""
    drawn = len(board(screen)) == 8 and detail_heading(screen) is not None
    return drawn and lines(screen)[-1].startswith(" q Quit  ? Help")


@pytest.mark.slow
def test_the_inbox_runs_in_a_terminal_and_its_keys_act(start_inbox: Callable[..., Inbox]) -> None:
    inbox = start_inbox()
    ids, terminal = inbox.ids, inbox.terminal
    screen = terminal.wait_for(showing_board, "the board")
    assert "2 attn · 1 retry · 2 run · 1 held · 2 wait" in lines(screen)[0]
    assert board(screen) == [
        ("ATTN", ids.attention),
        ("ATTN", ids.auth),
        ("RETRY", ids.retry),
        ("RUN", ids.gone),
        ("RUN", ids.running),
        ("HELD", ids.blocked),
        ("WAIT", ids.queued),
        ("WAIT", ids.todo),
    ]
    assert "Fix the flaky login test" in screen
    assert "Think about" in screen  # the title keeps 12 cells beside the reasons
    assert detail_heading(screen) == f"Item {ids.attention}  needs-attention  generation 1"
    assert "Drop Python 3.10" not in screen  # cancelled: not on the board
    assert "Rename the config keys" not in screen  # done
    assert len(lines(screen)) == HEIGHT
    assert max(cell_len(line) for line in lines(screen)) <= WIDTH
    assert lines(screen)[-1].startswith(" q Quit  ? Help")

    terminal.send("?")
    terminal.wait_for_text(  # all of it: it fits 24 lines
        "the items that need a person, live", "select an item", "Press escape to close."
    )
    terminal.send("Escape")
    screen = terminal.wait_for(
        lambda s: "select an item" not in s and showing_board(s), "the board again"
    )

    terminal.send("j")
    screen = terminal.wait_for(
        lambda s: (detail_heading(s) or "").startswith(f"Item {ids.auth}  "), "the next item"
    )
    assert "auth: the provider refused the key" in screen  # the reason, whole, in the detail

    steps = [row for _, row in board(screen)].index(ids.queued) - 1
    terminal.send(*["j"] * steps)
    terminal.wait_for(
        lambda s: (detail_heading(s) or "").startswith(f"Item {ids.queued}  queued  "),
        "the queued item",
    )
    terminal.send("c")
    terminal.wait_for_text(f"Cancel item {ids.queued}? Cancelled is final.", "y: yes    n: no")
    terminal.send("y")
    screen = terminal.wait_for(
        lambda s: (
            message_line(s) == f"item {ids.queued} is cancelled"
            and ids.queued not in [row for _, row in board(s)]  # the board read again
            and "· 1 wait ·" in lines(s)[0]
        ),
        "the item cancelled, and gone from the board",
    )
    assert len(board(screen)) == 7
    store = open_project_store(inbox.project)
    try:
        cancelled = store.get_item(ids.queued)
        assert cancelled is not None
        assert cancelled.state is ItemState.CANCELLED
    finally:
        store.close()

    terminal.send("q")
    assert terminal.wait_for_exit() == 0


@pytest.mark.slow
def test_a_read_only_inbox_says_so_and_refuses_to_act(start_inbox: Callable[..., Inbox]) -> None:
    inbox = start_inbox("--read-only")
    ids, terminal = inbox.ids, inbox.terminal
    screen = terminal.wait_for(showing_board, "the board")
    assert lines(screen)[0].startswith(" wrighty read-only · 2 attn · ")
    terminal.send("c")
    screen = terminal.wait_for(lambda s: message_line(s) == READ_ONLY_REFUSAL, "the refusal")
    assert "Cancelled is final" not in screen  # not even asked
    store = open_project_store(inbox.project)
    try:
        untouched = store.get_item(ids.attention)
        assert untouched is not None
        assert untouched.state is ItemState.NEEDS_ATTENTION
    finally:
        store.close()
    terminal.send("q")
    assert terminal.wait_for_exit() == 0


@pytest.mark.slow
def test_without_a_terminal_the_inbox_refuses_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = make_project(tmp_path / "project", monkeypatch)
    refused = run_installed(project, "inbox", timeout=WAIT_SECONDS)
    assert refused.returncode == 2
    assert refused.stdout == ""
    assert refused.stderr == (
        "wrighty: wrighty inbox needs a terminal on stdin and stdout; for scripts use "
        "`wrighty list --attention --json` or `wrighty status --json`\n"
    )


# Reasons the seed leaves (domain/board.py's WHY), each whole on the board where it fits.
AUTH_WHY = "auth: the provider refused the key"
LONG_WHY = "agent-failure: the agent said it cannot finish: the test needs a database"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("size", "whole"), [((80, 24), [AUTH_WHY]), ((200, 50), [AUTH_WHY, LONG_WHY])]
)
def test_the_reason_takes_the_width_the_title_does_not_use(
    start_inbox: Callable[..., Inbox], size: tuple[int, int], whole: list[str]
) -> None:
    """At 80x24 a reason of 34 characters shows whole (the title keeps 12 cells; it was cut
    at 18 before); at 200x50, beside the side panel, the longest (74) does, and every title
    too."""
    inbox = start_inbox(size=size)
    screen = inbox.terminal.wait_for(
        # the footer on the pane's last row: the app drawn at the pane's size
        lambda s: len(board(s)) == 8 and lines(s)[size[1] - 1].startswith(" q Quit"),
        "the board, the footer on the last row",
    )
    rows = [line for line in lines(screen) if ROW.match(line)]
    for reason in whole:
        assert any(reason in row for row in rows), f"{reason!r} cut; the screen:\n{screen}"
    if size[0] >= 200:
        for title in (
            "Fix the flaky login test",
            "Write the migration guide",
            "Think about caching",
        ):
            assert any(title in row for row in rows), (title, screen)
    assert max(cell_len(line) for line in lines(screen)) <= size[0]
    inbox.terminal.send("q")
    assert inbox.terminal.wait_for_exit() == 0
