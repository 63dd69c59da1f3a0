"""Where notices go (docs/notifications.md#sinks): Apprise URLs and a command.

A sink has a stable id, recorded in a notice's ``delivered_to`` once it has the notice, so that a
retry goes only to the sinks that do not have it yet; and a label, which is all that people
see of it (in `wrighty notify test`, `notify pending`, the worker's events): the scheme, and the
host only where the host cannot be a token. Neither ever holds a URL, a token or an argument.

A sink's delivery never raises: it answers None when the notice went out, or why it did not,
in wrighty's own words (docs/notifications.md#secrets). Nothing Apprise says is passed on: a
library that decodes a URL (percent, plus, base64) may quote a token in any encoding, so no
filter of its text can be trusted. What Apprise reports is only sorted into a few kinds (the
service answered with an HTTP status, it could not be reached, it did not send), each said
with fixed words and, for the first, the status code.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import logging
import os
import re
import subprocess
import threading
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from http import HTTPStatus
from typing import Any, Protocol

from wrighty.config import (
    DEFAULT_COMMAND_TIMEOUT_SECONDS,
    CommandSink,
    NotifySettings,
    UrlSink,
    apprise_url_problem,
    url_scheme,
)
from wrighty.domain.classify import signal_name
from wrighty.domain.outbox import Notice
from wrighty.domain.text import printable_line
from wrighty.supervisor.linux import with_parent_death_signal
from wrighty.supervisor.process import executable_problem

# How long one Apprise delivery may take in all (Apprise stops the call after it).
APPRISE_TIMEOUT_SECONDS = 60
# Schemes whose host is a host name (a webhook's or a mail server's), never a token: their
# label shows it. Every other service may keep a token there (slack://, tgram://, ntfy://).
HOST_SHOWN = frozenset({"json", "jsons", "xml", "xmls", "form", "forms", "mailto", "mailtos"})
# Apprise sends these as JSON: their body is the notice's whole payload.
JSON_SCHEMES = frozenset({"json", "jsons"})
MAX_PROGRAM_CHARS = 40


class Sink(Protocol):
    """Where notices go: ``AppriseSink`` and ``CommandSinkRunner`` implement it, and the
    deliverer (delivery.py) knows no other kind. Its promises, which
    tests/contract/test_sinks.py holds every sink to:

    - ``id`` follows the destination only (not the filter, not the label), so that a notice's
      ``delivered_to`` still names the sink after its filter changed;
    - ``label()`` and whatever ``deliver`` answers never hold a URL, a token or an argument;
    - ``deliver`` never raises and returns within ``time_bound_seconds``;
    - ``wants`` is the sink's filter alone: it reads no clock, store or network.
    """

    @property
    def id(self) -> str:
        """Stable across runs and installations for the same destination."""
        ...

    def label(self) -> str:
        """What people see of the sink: its kind and where it is written in wrighty.json."""
        ...

    @property
    def time_bound_seconds(self) -> float:
        """The longest one delivery may take."""
        ...

    def wants(self, notice: Notice) -> bool:
        """Whether the sink's events and reason codes take ``notice``."""
        ...

    def deliver(self, notice: Notice) -> str | None:
        """Send ``notice``; None when it went out, else why not (no secret in it)."""
        ...


MAX_REPLY_TEXT_CHARS = 4000


@dataclass(frozen=True)
class Reply:
    """A person's answer to a notice, as a two-way channel (a chat, a tracker) received it:
    what it asks of which item. The operator's desk decides whether the action is allowed;
    a reply is a request, never a move."""

    item_id: int
    action: str  # an operator action's name: "retry", "cancel", "accept", "reject"...
    text: str  # the person's words (a rejection's feedback), at most MAX_REPLY_TEXT_CHARS
    sender: str  # who, as the channel names them: a label, never a token
    notice_id: str | None = None  # the notice it answers, when the channel tells


class ReplySource(Protocol):
    """The way back of a two-way sink: the replies people sent to its notices. No sink
    implements it yet (docs/notifications.md#sinks); one that does is also a ``Sink``."""

    @property
    def id(self) -> str:
        """The same id as the sink's, so a reply can be matched to what was sent there."""
        ...

    def label(self) -> str: ...

    def receive(self) -> list[Reply]:
        """The replies that came since the last call, oldest first. Never raises: a channel
        that cannot be read now answers none."""
        ...


@lru_cache(maxsize=64)
def sink_id(prefix: str, destination: str) -> str:
    """``prefix:`` and 8 hex digits of a slow hash of where the sink sends: a sink whose
    destination changed gets another id (it does not have what the old one had), while the
    id tells nothing of a URL or a password that a guess could be checked against quickly."""
    digest = hashlib.pbkdf2_hmac("sha256", destination.encode(), b"wrighty notify sink", 100_000)
    return f"{prefix}:{digest.hex()[:8]}"


def describe_url(url: str) -> str:
    """A URL as labels show it: its scheme, and its host where that is a host name."""
    scheme = url_scheme(url)
    if scheme is None:
        return "a URL without a scheme"
    if scheme not in HOST_SHOWN:
        return f"{scheme}://"
    try:
        parts = urllib.parse.urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return f"{scheme}://"
    if not host or not all(c.isalnum() or c in ".-:" for c in host):
        return f"{scheme}://"
    shown = f"[{host}]" if ":" in host else host
    return f"{scheme}://{shown}" + (f":{port}" if port else "")


@dataclass(frozen=True)
class _Filter:
    events: tuple[str, ...]
    reason_codes: tuple[str, ...]

    def wants(self, notice: Notice) -> bool:
        """Its events, and its reason codes for a notice about an item (one about no item,
        such as circuit-open, passes any reason-code filter)."""
        codes = self.reason_codes if notice.item_id is not None else ()
        return notice.matches(self.events, codes)


_quieted = False


def quiet_apprise() -> None:
    """Apprise (and urllib3 under it) may put a URL in a log line: their records go to no
    handler of this process. Apprise still hands each call's warnings back in its result."""
    global _quieted
    if not _quieted:
        for name in ("apprise", "urllib3"):
            logging.getLogger(name).propagate = False
        _quieted = True


@dataclass(frozen=True)
class AppriseSink:
    """An Apprise URL, written in wrighty.json or read from the environment at delivery."""

    where: str  # notify.urls.N, or --url
    url: str | None
    env: str | None
    filter: _Filter
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)

    @property
    def id(self) -> str:
        prefix = self.where.removeprefix("notify.")
        destination = json.dumps({"env": self.env} if self.env else {"url": self.url})
        return sink_id(prefix, destination)

    @property
    def time_bound_seconds(self) -> float:
        return APPRISE_TIMEOUT_SECONDS

    def label(self) -> str:
        if self.env is None:
            return f"{describe_url(self.url or '')} ({self.where})"
        value = self.environ.get(self.env)
        if not value:
            return f"${self.env} ({self.where}, not set)"
        return f"{describe_url(value)} ({self.where}, ${self.env})"

    def wants(self, notice: Notice) -> bool:
        return self.filter.wants(notice)

    def _resolved(self) -> tuple[str | None, str | None]:
        """The URL, or why there is none to use."""
        if self.env is None:
            return self.url, None
        value = self.environ.get(self.env)
        if value is None:
            return None, f"the environment variable {self.env} is not set"
        if not value.strip():
            return None, f"the environment variable {self.env} is empty"
        return value.strip(), None

    def deliver(self, notice: Notice) -> str | None:
        url, missing = self._resolved()
        if url is None:
            return missing
        try:
            return self._send(url, notice)
        except Exception as error:  # a sink's failure is that sink's, never the deliverer's
            return f"Apprise failed ({type(error).__name__})"  # its text may quote the URL

    def _send(self, url: str, notice: Notice) -> str | None:
        if self.env is not None:  # read now: check it as the file's URLs were checked
            problem = apprise_url_problem(url)
            if problem is not None:
                return f"${self.env} {problem}"
        quiet_apprise()
        import apprise

        scheme = url_scheme(url) or ""
        sender = apprise.Apprise(asset=apprise.AppriseAsset(storage_mode="memory"))
        if not sender.add(url):
            return f"Apprise cannot use this {scheme}:// URL on this machine"
        title, body = notice.text()
        if scheme in JSON_SCHEMES:
            body = json.dumps(notice.payload, ensure_ascii=False)
        result = sender.notify(body=body, title=title, **_call_timeout(sender))
        if result:
            return None
        return apprise_failure([str(entry.message) for entry in _logs(result)])


# How Apprise reports an HTTP answer it did not want ("..., error=503.") and a connection that
# failed ("A Connection error occurred ..."): only which of these it was is kept.
_HTTP_ERROR = re.compile(r"\berror=(\d{3})\.?\s*$")
_CONNECTION_ERROR = re.compile(r"\bconnection error\b", re.IGNORECASE)
_STATUSES = {status.value: status.phrase for status in HTTPStatus}


def apprise_failure(said: list[str]) -> str:
    """Why Apprise did not send, from what it said (``said``, oldest first), in wrighty's
    own words: the HTTP status the service answered (a code it knows, with its standard
    phrase), or that it could not be reached, or neither. None of Apprise's text is kept."""
    for message in reversed(said):
        found = _HTTP_ERROR.search(message)
        if found is not None and int(found.group(1)) in _STATUSES:
            code = int(found.group(1))
            return f"Apprise did not send it: the service answered HTTP {code} {_STATUSES[code]}"
        if _CONNECTION_ERROR.search(message):
            return "Apprise did not send it: the service could not be reached"
    return "Apprise did not send it"


def _call_timeout(sender: Any) -> dict[str, Any]:
    """Apprise 2 bounds a whole call; older ones have only their services' own timeouts."""
    accepts = "timeout" in inspect.signature(sender.notify).parameters
    return {"timeout": APPRISE_TIMEOUT_SECONDS} if accepts else {}


def _logs(result: Any) -> list[Any]:
    logs = getattr(result, "logs", None)
    return list(logs()) if callable(logs) else []


class Interruption:
    """Stops the command sinks' processes of one deliverer when it stops (docs/notifications.md
    #the-outbox): each whole process tree is killed, and the attempt under way lets its notice
    go rather than count the cut as a failure. Thread-safe: fired from the stopping thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: set[subprocess.Popen[bytes]] = set()
        self._fired = False

    @property
    def fired(self) -> bool:
        return self._fired

    def fire(self) -> None:
        with self._lock:
            self._fired = True
            running = list(self._running)
        for process in running:
            _kill_tree(process)

    @contextlib.contextmanager
    def watching(self, process: subprocess.Popen[bytes]) -> Iterator[None]:
        with self._lock:
            self._running.add(process)
            fired = self._fired
        if fired:
            _kill_tree(process)
        try:
            yield
        finally:
            with self._lock:
                self._running.discard(process)


@dataclass(frozen=True)
class CommandSinkRunner:
    """A program (argv, never a shell) that gets the notice's JSON on standard input. It
    worked if it exits 0 within its timeout. It runs in a process group of its own, and dies
    with the thread that started it (a parent-death signal, as agents do): on the timeout, or
    when its deliverer stops, its whole process tree is killed. Its output is not read (it goes
    nowhere)."""

    argv: tuple[str, ...]
    timeout_seconds: float
    filter: _Filter
    where: str = "notify.command"
    interruption: Interruption = field(default_factory=Interruption, compare=False)

    @property
    def id(self) -> str:
        return sink_id("command", json.dumps(list(self.argv)))

    @property
    def time_bound_seconds(self) -> float:
        return self.timeout_seconds + 5

    def label(self) -> str:
        program = printable_line(os.path.basename(self.argv[0]))[:MAX_PROGRAM_CHARS]
        return f"command {program} ({self.where})"

    def wants(self, notice: Notice) -> bool:
        return self.filter.wants(notice)

    def deliver(self, notice: Notice) -> str | None:
        problem = executable_problem(self.argv[0], os.environ.get("PATH"))
        if problem is not None:
            return f"cannot start the program: {printable_line(problem)}"
        data = (json.dumps(notice.payload, ensure_ascii=False) + "\n").encode()
        argv, pre_exec = with_parent_death_signal(list(self.argv), os.getpid())
        try:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # its own process group
                close_fds=True,
                preexec_fn=pre_exec,
            )
        except OSError as error:
            why = (error.strerror or type(error).__name__).lower()
            return f"cannot start the program ({why})"
        with self.interruption.watching(process):
            try:
                process.communicate(data, timeout=self.timeout_seconds)
            except subprocess.TimeoutExpired:
                _kill_tree(process)
                process.wait()
                return f"did not finish within {self.timeout_seconds:g} s and was killed"
            except BaseException:
                _kill_tree(process)
                process.wait()
                raise
        code = process.returncode
        if code == 0:
            return None
        if code < 0:
            return f"was killed by {signal_name(-code)}"
        return f"exited with status {code}"


def _kill_tree(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL to the program's process group and to every descendant of it (its waiter
    reaps it)."""
    from wrighty.supervisor.tree import kill_group_and_descendants

    kill_group_and_descendants(process.pid)


def sinks_of(
    settings: NotifySettings,
    *,
    environ: Mapping[str, str] | None = None,
    interruption: Interruption | None = None,
) -> list[Sink]:
    """The configured sinks, in the order of wrighty.json: notify.urls, then notify.command
    (its processes stopped by ``interruption``, when given)."""
    env = os.environ if environ is None else environ
    stops = Interruption() if interruption is None else interruption
    default = tuple(settings.events)
    sinks: list[Sink] = []
    for index, entry in enumerate(settings.urls):
        where = f"notify.urls.{index}"
        if isinstance(entry, str):
            sinks.append(AppriseSink(where, entry, None, _Filter(default, ()), env))
        else:
            sinks.append(AppriseSink(where, entry.url, entry.env, _filter_of(entry, default), env))
    command = settings.command
    if isinstance(command, CommandSink):
        runner = CommandSinkRunner(
            tuple(command.argv),
            command.timeout_seconds,
            _filter_of(command, default),
            interruption=stops,
        )
        sinks.append(runner)
    elif command is not None:
        runner = CommandSinkRunner(
            tuple(command),
            DEFAULT_COMMAND_TIMEOUT_SECONDS,
            _Filter(default, ()),
            interruption=stops,
        )
        sinks.append(runner)
    return sinks


def _filter_of(entry: UrlSink | CommandSink, default: tuple[str, ...]) -> _Filter:
    events = tuple(entry.events) if entry.events is not None else default
    return _Filter(events, tuple(entry.reason_codes or ()))


def url_sink(url: str, *, environ: Mapping[str, str] | None = None) -> AppriseSink:
    """One URL given on the command line (`wrighty notify test --url`), with every event."""
    from wrighty.domain.notices import EVENTS, TEST_EVENT

    env = os.environ if environ is None else environ
    return AppriseSink("--url", url, None, _Filter((*EVENTS, TEST_EVENT), ()), env)
