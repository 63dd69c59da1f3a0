"""Checking wrighty.json: the rules that relate one setting to another, the store URL, and
(asked for) whether Apprise can use each notification URL."""

from __future__ import annotations

import os
import re
from pathlib import Path

from pydantic import ValidationError

from wrighty.config.adapter_names import is_adapter_name
from wrighty.config.models import (
    AGENT_NAME_PATTERN,
    MAX_MODEL_NAME,
    AgentSettings,
    CheckSettings,
    CompletionSettings,
    ProcessCrashPolicy,
    UsageFailurePolicy,
    WorkerSettings,
    WrightyConfig,
)
from wrighty.config.notify_settings import (
    CommandSink,
    NotifySettings,
    UrlSink,
)
from wrighty.config.problems import (
    EMPTY_CHECK_PROGRAM,
    EMPTY_INTEGRATE_PROGRAM,
    EMPTY_PROGRAM,
    Problem,
    echo_value,
    json_path,
    number_text,
    problems_from,
    read_json,
)
from wrighty.config.sandbox_settings import BubblewrapProfile
from wrighty.config.source_settings import source_problems
from wrighty.config.translate import fix_turns_limit, pull_request_problems, zone_named
from wrighty.domain.adapters import ADAPTERS, COMMAND_ADAPTER, VENDOR_ADAPTERS
from wrighty.domain.leases import heartbeat_limit
from wrighty.domain.scheduling import LABEL_PATTERN
from wrighty.domain.verify_limits import MAX_CHECKS
from wrighty.domain.work_product import branch_prefix_problem, identity_problem
from wrighty.errors import StoreError


def check_config_text(
    text: str, *, deep: bool = False
) -> tuple[WrightyConfig | None, list[Problem]]:
    """Validate wrighty.json contents; every problem found, with its JSON path. ``deep`` also
    asks Apprise whether it can use each notification URL (`config validate`, a worker's
    start): that loads Apprise, which no other command needs."""
    data, problems = read_json(text)
    if data is None:
        return None, problems
    try:
        config = WrightyConfig.model_validate(data)
    except ValidationError as error:
        return None, problems_from(error.errors())
    problems = _store_url_problems(config.store.url) + _cross_checks(config)
    problems += _listen_url_problems(config.store.url, config.store.listen_url)
    if deep:
        problems.extend(notify_url_problems(config.notify))
    return (None if problems else config), problems


def _listen_url_problems(url: str, listen_url: str | None) -> list[Problem]:
    """store.listenUrl is a PostgreSQL URL of the store's own database (a LISTEN elsewhere
    would hear nothing), given only with a PostgreSQL store."""
    if listen_url is None:
        return []
    from wrighty.store.postgres import read_url  # (psycopg: only where a listenUrl is given)

    where = "store.listenUrl"
    if not url.startswith(("postgresql://", "postgres://")):
        return [Problem(where, "is for a PostgreSQL store (store.url is not one): remove it")]
    if not listen_url.startswith(("postgresql://", "postgres://")):
        return [Problem(where, "must be a postgresql:// URL: the server's own, past the pooler")]
    try:
        listen, store = read_url(listen_url), read_url(url)
    except StoreError as error:
        return [Problem(where, str(error))]
    if (listen.get("dbname") or "") != (store.get("dbname") or ""):
        return [
            Problem(
                where,
                f"names database {listen.get('dbname')!r}, but the store is in "
                f"{store.get('dbname')!r}: a LISTEN hears only its own database's NOTIFY; give "
                "the same database, past the pooler",
            )
        ]
    return []


def _store_url_problems(url: str) -> list[Problem]:
    """The check of the store URL that opening a store makes, opening nothing."""
    from wrighty.store import parse_store_url  # loaded only where a config is checked

    try:
        parse_store_url(url, base=Path())
    except StoreError as error:
        return [Problem("store.url", str(error))]
    return []


def _unpassable_text(name: str, agent: AgentSettings) -> list[Problem]:
    """Values no program can be given: a NUL byte in an argument or an environment value, an
    environment name that is empty or holds '=' (it would set another variable)."""
    problems = []
    texts: list[tuple[tuple[str | int, ...], str]] = [(("executable",), agent.executable or "")]
    for key, argv in (("args", agent.args), ("command", agent.command),
                      ("resumeCommand", agent.resume_command)):  # fmt: skip
        texts += [((key, index), arg) for index, arg in enumerate(argv or [])]
    texts += [(("env", variable), value) for variable, value in agent.env.items()]
    for where, text in texts:
        if "\x00" in text:
            problems.append(Problem(json_path("agents", name, *where), "holds a NUL byte"))
    for variable in agent.env:
        if not variable or "=" in variable or "\x00" in variable:
            problems.append(
                Problem(
                    json_path("agents", name, "env", variable),
                    "is not an environment variable name (empty, or holds '=' or NUL)",
                )
            )
    return problems


def _retry_window_problems(worker: WorkerSettings) -> list[Problem]:
    """A retry policy whose first wait is longer than its longest one."""
    policies: tuple[tuple[str, ProcessCrashPolicy | UsageFailurePolicy], ...] = (
        ("processCrash", worker.process_crash),
        ("usageFailure", worker.usage_failure),
    )
    return [
        Problem(
            f"worker.{key}.maxRetryMinutes",
            f"must be >= initialRetryMinutes ({number_text(policy.initial_retry_minutes)})"
            f" (got {number_text(policy.max_retry_minutes)})",
        )
        for key, policy in policies
        if policy.max_retry_minutes < policy.initial_retry_minutes
    ]


def _cross_checks(config: WrightyConfig) -> list[Problem]:
    """Rules that relate one setting to another."""
    problems: list[Problem] = []
    worker = config.worker
    limit = heartbeat_limit(worker.lease_seconds)
    if worker.heartbeat_seconds >= limit:
        margin = worker.lease_seconds - limit
        problems.append(
            Problem(
                "worker.heartbeatSeconds",
                f"must be < {number_text(limit)}: "
                f"worker.leaseSeconds ({number_text(worker.lease_seconds)})"
                f" less the lease guard's margin ({number_text(margin)}, docs/claims.md)"
                f" (got {number_text(worker.heartbeat_seconds)})",
            )
        )
    problems.extend(_retry_window_problems(worker))
    for name, agent in config.agents.items():
        problems.extend(_unpassable_text(name, agent))
        if not re.fullmatch(AGENT_NAME_PATTERN, name):
            problems.append(
                Problem(
                    json_path("agents", name),
                    "agent names use lowercase letters, digits, '-' and '_', "
                    "starting with a letter",
                )
            )
        elif agent.adapter is None and not is_adapter_name(name):
            problems.append(
                Problem(
                    json_path("agents", name, "adapter"),
                    f"is required for an agent not named after an adapter ({', '.join(ADAPTERS)})",
                )
            )
        elif agent.adapter_for(name) == COMMAND_ADAPTER and not agent.command:
            problems.append(
                Problem(json_path("agents", name, "command"), "is required by the command adapter")
            )
        elif agent.adapter_for(name) == COMMAND_ADAPTER and "permission" in agent.model_fields_set:
            problems.append(
                Problem(
                    json_path("agents", name, "permission"),
                    f"applies only to the vendor adapters ({', '.join(VENDOR_ADAPTERS)})",
                )
            )
        elif agent.adapter_for(name) != COMMAND_ADAPTER:
            problems.extend(
                Problem(json_path("agents", name, key), "applies only to the command adapter")
                for key, value in (
                    ("command", agent.command),
                    ("resumeCommand", agent.resume_command),
                )
                if value is not None
            )
    problems.extend(_budget_problems(config))
    problems.extend(_fallback_problems(config))
    problems.extend(
        Problem(
            json_path("limits", "labels", label),
            "labels use lowercase letters, digits, '-' and '_', starting with a letter "
            "(at most 40 characters)",
        )
        for label in config.limits.labels
        if not re.fullmatch(LABEL_PATTERN, label)
    )
    problems.extend(_notify_shape_problems(config.notify))
    problems.extend(_verify_problems(config))
    problems.extend(_completion_problems(config.completion))
    problems.extend(Problem(*p) for p in source_problems(config.sources, config.agent_names()))
    problems.extend(Problem(*p) for p in pull_request_problems(config))
    if worker.default_agent not in config.agent_names():
        problems.append(
            Problem(
                "worker.defaultAgent",
                f"unknown agent {worker.default_agent!r} "
                f"(known: {', '.join(config.agent_names())})",
            )
        )
    return problems


def _completion_problems(completion: CompletionSettings) -> list[Problem]:
    """A branch prefix git accepts, a base git cannot take for an option, an author git keeps
    as written, an integration command that can be run when accepting runs one
    (docs/work-product.md)."""
    problems: list[Problem] = []
    prefix = branch_prefix_problem(completion.branch_prefix)
    if prefix is not None:
        got = echo_value(completion.branch_prefix, ("completion", "branchPrefix"))
        problems.append(Problem("completion.branchPrefix", prefix + got))
    base = completion.base
    if base is not None and (base.startswith("-") or not _GIT_REF.fullmatch(base)):
        problems.append(
            Problem(
                "completion.base",
                "must name a git ref or commit (as `main`, `origin/main`, `v1.2` or a commit id), "
                "not starting with '-'" + echo_value(base, ("completion", "base")),
            )
        )
    if completion.author is not None:
        for key in ("name", "email"):
            value = getattr(completion.author, key)
            problem = identity_problem(value)
            if problem is not None:
                at = ("completion", "author", key)
                problems.append(Problem(json_path(*at), problem + echo_value(value, at)))
    return problems + _integrate_command_problems(completion)


def _integrate_command_problems(completion: CompletionSettings) -> list[Problem]:
    """integrateCommand is given when integrate is command, and can be passed."""
    argv = completion.integrate_command
    if argv is None:
        if completion.integrate != "command":
            return []
        return [
            Problem(
                "completion.integrateCommand",
                'is required when completion.integrate is "command": the program and its '
                'arguments, as in ["gh", "pr", "create", "--fill"]',
            )
        ]
    problems = []
    for index, arg in enumerate(argv):
        where = json_path("completion", "integrateCommand", index)
        if "\x00" in arg:
            problems.append(Problem(where, "holds a NUL byte"))
        elif index == 0 and not arg:
            problems.append(Problem(where, EMPTY_INTEGRATE_PROGRAM))
    return problems


# What completion.base may hold: a ref's letters, and git's ^ ~ @ { } of revision syntax.
_GIT_REF = re.compile(r"[A-Za-z0-9._/@^~{}+-]+")


def _fallback_problems(config: WrightyConfig) -> list[Problem]:
    """Each agent's fallbacks: agents wrighty.json knows, not the agent itself, each once."""
    problems: list[Problem] = []
    known = config.agent_names()
    for name, agent in sorted(config.agents.items()):
        seen: set[str] = set()
        for index, other in enumerate(agent.fallback):
            where = json_path("agents", name, "fallback", index)
            if other not in known:
                problems.append(
                    Problem(where, f"unknown agent {other!r} (known: {', '.join(known)})")
                )
            elif other == name:
                problems.append(Problem(where, "an agent is not its own fallback"))
            elif other in seen:
                problems.append(Problem(where, f"{other!r} is listed twice"))
            seen.add(other)
    return problems


def _budget_problems(config: WrightyConfig) -> list[Problem]:
    problems: list[Problem] = []
    known = set(config.agent_names()) | {"*"}
    problems.extend(
        Problem(
            json_path("budgets", "perDay", name),
            f'unknown agent {name!r} (known: {", ".join(config.agent_names())}, or "*")',
        )
        for name in config.budgets.per_day
        if name not in known
    )
    zone = config.budgets.time_zone
    try:
        zone_named(zone)
    except ValueError:
        # The name as the other problems echo a value: short ones only, JSON-escaped.
        problems.append(
            Problem(
                "budgets.timeZone",
                f"unknown time zone{echo_value(zone, ('budgets', 'timeZone'))}; "
                "use an IANA name such as Europe/Berlin",
            )
        )
    # The JSON Schema's propertyNames for `pricing`, which the model alone does not check.
    problems.extend(
        Problem(json_path("pricing", model), "a model name has 1 to 200 characters")
        for model in config.pricing
        if not 1 <= len(model) <= MAX_MODEL_NAME
    )
    return problems


def _verify_problems(config: WrightyConfig) -> list[Problem]:
    """A check's argv can be passed; check names are unique across the project's checks and
    each agent's; an agent's items run at most MAX_CHECKS checks (docs/verify.md)."""
    located = _located_checks(config)
    problems: list[Problem] = []
    for where, checks in located:
        for index, check in enumerate(checks):
            for position, arg in enumerate(check.argv):
                at = json_path(*where, "checks", index, "argv", position)
                if "\x00" in arg:
                    problems.append(Problem(at, "holds a NUL byte"))
                elif position == 0 and not arg:
                    problems.append(Problem(at, EMPTY_CHECK_PROGRAM))
    project = config.verify.checks if config.verify is not None else []
    project_named = {
        check.name: json_path("verify", "checks", index) for index, check in enumerate(project)
    }
    for where, checks in located:
        named = {} if where == ("verify",) else dict(project_named)
        for index, check in enumerate(checks):
            if check.name in named:
                problems.append(
                    Problem(
                        json_path(*where, "checks", index, "name"),
                        f"{check.name!r} is already the name of {named[check.name]}; give each "
                        "check its own (an agent's checks run with verify.checks)",
                    )
                )
            named.setdefault(check.name, json_path(*where, "checks", index))
        if where != ("verify",) and len(project) + len(checks) > MAX_CHECKS:
            problems.append(
                Problem(
                    json_path(*where, "checks"),
                    f"with the {len(project)} of verify.checks, the agent's items would run "
                    f"{len(project) + len(checks)} checks: at most {MAX_CHECKS}",
                )
            )
    return problems


def check_program_problems(config: WrightyConfig, *, agent: str | None = None) -> list[Problem]:
    """Checks whose program this process cannot find on its PATH (``agent``: only the checks
    that agent's items run), each at its argv. A relative path (with a '/') names a file in
    each item's workspace, which only a run has: it is left to the run (docs/verify.md)."""
    from wrighty.supervisor.process import executable_problem

    problems = []
    for where, checks in _located_checks(config):
        if agent is not None and where[:2] not in (("verify",), ("agents", agent)):
            continue
        for index, check in enumerate(checks):
            program = check.argv[0]
            if os.sep in program and not os.path.isabs(program):
                continue
            problem = executable_problem(program, None)
            if problem is not None:
                at = json_path(*where, "checks", index, "argv")
                problems.append(Problem(at, f"check {check.name!r}: program {problem}"))
    return problems


def config_warnings(config: WrightyConfig) -> list[Problem]:
    """What `config validate` tells of a valid file without refusing it: a check's program
    missing here (``check_program_problems``), an agent whose failed checks get no fix turn,
    a sandbox that cannot start here."""
    return check_program_problems(config) + no_fix_turn_problems(config) + sandbox_problems(config)


def sandbox_problems(config: WrightyConfig) -> list[Problem]:
    """The bubblewrap sandboxes of the file that cannot start on this machine (each program
    probed once): a worker whose agent runs in one refuses to start (docs/sandbox.md)."""
    from wrighty.supervisor.sandboxing import sandbox_problem

    located: list[tuple[tuple[str, ...], object]] = [(("worker", "sandbox"), config.worker.sandbox)]
    located += [
        (("agents", name, "sandbox"), agent.sandbox) for name, agent in config.agents.items()
    ]
    problems: list[Problem] = []
    found: dict[str, str | None] = {}
    for where, setting in located:
        if not isinstance(setting, BubblewrapProfile):
            continue
        program = setting.program
        if program not in found:
            found[program] = sandbox_problem(program)
        problem = found[program]
        if problem is not None:
            problems.append(
                Problem(
                    json_path(*where),
                    f"bubblewrap {program!r} {problem}, so a worker whose agent runs in this "
                    "sandbox refuses to start on this machine; install it (Debian: apt-get "
                    "install bubblewrap) or set program to its path",
                )
            )
    return problems


def no_fix_turn_problems(config: WrightyConfig) -> list[Problem]:
    """Agents whose items have checks and fix turns, but whose sessions cannot be resumed: a
    failed check sends their item to a person at once (docs/verify.md)."""
    problems = []
    for name, agent in config.agents.items():  # an agent not written there resumes
        if not fix_turns_limit(config, name):  # no checks, or verify.maxFixTurns 0
            continue
        if not agent.resume:
            why = "its resume is false"
        elif agent.adapter_for(name) == COMMAND_ADAPTER and not agent.resume_command:
            why = "a command agent without resumeCommand cannot resume"
        else:
            continue
        problems.append(
            Problem(
                json_path("agents", name),
                f"its items have checks but {why}, so a failed check gets no fix turn and "
                "waits for a person; set resumeCommand (and resume true), or verify.maxFixTurns "
                "to 0 to say so",
            )
        )
    return problems


def _located_checks(
    config: WrightyConfig,
) -> list[tuple[tuple[str | int, ...], list[CheckSettings]]]:
    """Every check list in the file, with where it is: the project's, then each agent's."""
    located: list[tuple[tuple[str | int, ...], list[CheckSettings]]] = []
    if config.verify is not None:
        located.append((("verify",), config.verify.checks))
    located += [
        (("agents", name, "verify"), agent.verify.checks)
        for name, agent in config.agents.items()
        if agent.verify is not None
    ]
    return located


def _notify_shape_problems(notify: NotifySettings) -> list[Problem]:
    """A URL sink names its URL or its variable, one of the two; an argv can be passed."""
    problems: list[Problem] = [
        Problem(json_path("notify", "urls", index), "give url or env, one of the two")
        for index, entry in enumerate(notify.urls)
        if isinstance(entry, UrlSink) and (entry.url is None) == (entry.env is None)
    ]
    command = notify.command
    argv = command.argv if isinstance(command, CommandSink) else command
    for index, arg in enumerate(argv or []):
        where = json_path("notify", "command", *(("argv",) if isinstance(command, CommandSink)
                                                 else ()), index)  # fmt: skip
        if "\x00" in arg:
            problems.append(Problem(where, "holds a NUL byte"))
        elif index == 0 and not arg:
            problems.append(Problem(where, EMPTY_PROGRAM))
    return problems


def notify_url_problems(notify: NotifySettings) -> list[Problem]:
    """Whether Apprise can use each URL written in the file (a URL from the environment is
    read, and checked, when it is used). Apprise is imported only when there are such URLs."""
    problems: list[Problem] = []
    for index, entry in enumerate(notify.urls):
        url = entry if isinstance(entry, str) else entry.url
        if url is not None:
            problem = apprise_url_problem(url)
            if problem is not None:
                problems.append(Problem(json_path("notify", "urls", index), problem))
    return problems


_URL_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]{0,31})://")
# A plugin's page on Apprise's site: shown as the place to check a URL (it is Apprise's, not
# the user's: no part of the URL).
_GUIDE = re.compile(r"https://[a-z0-9.-]+/[A-Za-z0-9/_.-]*")


def url_scheme(url: str) -> str | None:
    """The scheme of a sink's URL, lowercase (None: it has none). The one part of a URL that
    messages show: the rest may be a token."""
    found = _URL_SCHEME.match(url)
    return found.group(1).lower() if found else None


def apprise_url_problem(url: str) -> str | None:
    """Why Apprise cannot use ``url`` (None: it can), without quoting any of it but its
    scheme. A service that Apprise knows but cannot run on this machine (a desktop without
    its libraries) is no problem here: the machine that delivers may have them."""
    scheme = url_scheme(url)
    if scheme is None:
        return "is not an Apprise URL: it needs a scheme such as slack://, ntfy:// or json://"
    import logging  # loaded with Apprise, only when the file has URLs to check

    import apprise
    from apprise.utils.parse import parse_urls

    logging.getLogger("apprise").propagate = False  # it may quote the URL
    if len(parse_urls(url)) != 1:  # type: ignore[no-untyped-call]
        return "holds more than one URL: give each its own entry"
    parsed = apprise.plugins.url_to_dict(url)  # type: ignore[no-untyped-call]
    manager = apprise.manager_plugins.NotificationManager()  # type: ignore[no-untyped-call]
    if parsed is None or parsed.get("schema") not in manager:
        return f"Apprise cannot read this {scheme}:// URL (an unknown service, or no host)"
    plugin = manager[parsed["schema"]]
    if not plugin.enabled:
        return None
    try:
        apprise.Apprise.instantiate(url, suppress_exceptions=False)
    except Exception:
        # Not its words: Apprise decodes the URL, and its message may quote a token in any
        # encoding (docs/notifications.md#secrets).
        guide = getattr(plugin, "setup_url", None)
        see = f"; see {guide}" if isinstance(guide, str) and _GUIDE.fullmatch(guide) else ""
        return f"Apprise cannot use this {scheme}:// URL: it refused a token or an option{see}"
    return None
