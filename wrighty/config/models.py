"""wrighty.json's sections as pydantic models, their bounds and defaults.

The JSON Schema in ``schemas/wrighty.schema.json`` is generated from these models
(``wrighty config schema``, loading.config_json_schema); a test keeps the two equal.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    Field,
    field_validator,
)

from wrighty.config.adapter_names import AdapterName
from wrighty.config.notify_settings import NotifySettings
from wrighty.config.sandbox_settings import (
    BubblewrapProfile,
    CheckSandboxSetting,
    SandboxSetting,
)
from wrighty.config.section import Section as _Section
from wrighty.config.source_settings import PullRequestSettings, SourcesSettings
from wrighty.config_file import DEFAULT_STORE_URL
from wrighty.domain.adapters import ADAPTERS
from wrighty.domain.durations import (
    MAX_ITEM_TIMEOUT_SECONDS,
    MAX_QUEUE_WAIT_SECONDS,
    MAX_WORKER_AGE_SECONDS,
)
from wrighty.domain.integration import (
    DEFAULT_REMOTE,
    DEFAULT_TIMEOUT_SECONDS,
    MAX_COMMAND_ARG_CHARS,
    MAX_COMMAND_ARGS,
    MAX_TIMEOUT_SECONDS,
    MIN_TIMEOUT_SECONDS,
    REMOTE_NAME,
)
from wrighty.domain.links import MAX_PUBLIC_URL_CHARS, check_public_url
from wrighty.domain.model import CHECK_NAME
from wrighty.domain.scheduling import LABEL_PATTERN
from wrighty.domain.verify_limits import (
    DEFAULT_CHECK_TIMEOUT_SECONDS,
    DEFAULT_FEEDBACK_BYTES,
    DEFAULT_FIX_TURNS,
    MAX_CHECKS,
    MAX_FEEDBACK_BYTES,
    MAX_FIX_TURNS,
    MIN_CHECK_TIMEOUT_SECONDS,
    MIN_FEEDBACK_BYTES,
)
from wrighty.domain.work_product import (
    DEFAULT_BRANCH_PREFIX,
    DEFAULT_MAX_REJECTIONS,
    MAX_BRANCH_PREFIX,
    MAX_IDENTITY,
    MAX_MAX_REJECTIONS,
)
from wrighty.store.connections import DEFAULT_POOL_SIZE, MAX_POOL_SIZE

SCHEMA_VERSION: Literal[1] = 1
MAX_CRASH_RETRY_ATTEMPTS = 20
MAX_USAGE_RETRY_ATTEMPTS = 50  # a night of limits
AGENT_NAME_PATTERN = r"^[a-z][a-z0-9_-]{0,39}$"
MAX_CONFIG_DEPTH = 32  # the deepest real wrighty.json is 4 levels
MAX_CONCURRENT = 10_000  # a bound for typos (agents.<name>.maxConcurrent, limits.labels)


class StoreSettings(_Section):
    url: str = Field(
        DEFAULT_STORE_URL,
        description=(
            "Where the state lives: sqlite:///relative/or/absolute.db (relative to this file) "
            "or postgresql://... Overridden by --store and WRIGHTY_STORE."
        ),
    )
    pool_size: int = Field(
        DEFAULT_POOL_SIZE,
        ge=1,
        le=MAX_POOL_SIZE,
        description="PostgreSQL: the server connections one wrighty process keeps for its "
        "calls, whatever its concurrency (a worker's LISTEN is one more): docs/scale.md.",
    )
    pooler: Literal["auto", "transaction", "session", "none"] = Field(
        "auto",
        description="PostgreSQL: whether the URL is a pooler's (PgBouncer): transaction "
        "(session settings in each transaction, no prepared statements, LISTEN on listenUrl), "
        "session (settings in each transaction, LISTEN on the URL itself), none, or auto (one "
        "that refuses the `options` startup parameter is taken for a transaction pooler).",
    )
    listen_url: str | None = Field(
        None,
        max_length=2000,
        description="PostgreSQL: the server's own URL (past the pooler) a worker LISTENs on "
        "for new work; without it, behind a transaction pooler a worker polls.",
    )


class ProcessCrashPolicy(_Section):
    action: Literal["needs-attention", "retry"] = Field(
        "needs-attention",
        description="What a process crash leads to: needs-attention (default) or a bounded retry.",
    )
    initial_retry_minutes: float = Field(
        2, gt=0, le=1440, description="Delay before the first retry, in minutes."
    )
    backoff_multiplier: float = Field(
        2, ge=1, le=100, description="Each further retry waits this many times longer."
    )
    max_retry_minutes: float = Field(
        15, gt=0, le=10080, description="No retry waits longer than this, in minutes."
    )
    max_attempts: int = Field(
        2,
        ge=1,
        le=MAX_CRASH_RETRY_ATTEMPTS,
        description="Retries after the first run (2 means at most 3 runs in all).",
    )


class UsageFailurePolicy(_Section):
    action: Literal["needs-attention", "retry"] = Field(
        "needs-attention",
        description="What a rate-limited or provider-unavailable run leads to: "
        "needs-attention (default) or a bounded retry.",
    )
    initial_retry_minutes: float = Field(
        30,
        gt=0,
        le=1440,
        description="Delay before the first retry when the provider reports no reset, in minutes.",
    )
    backoff_multiplier: float = Field(
        2,
        ge=1,
        le=100,
        description="Each further retry without a reported reset waits this many times longer.",
    )
    max_retry_minutes: float = Field(
        360,
        gt=0,
        le=10080,
        description="No retry waits longer than this, in minutes, counted from the end of the "
        "run, whether a reported reset or the backoff set the wait.",
    )
    max_attempts: int = Field(
        5,
        ge=1,
        le=MAX_USAGE_RETRY_ATTEMPTS,
        description="Usage retries after the first run, on their own counter (crash retries "
        "and requeues do not count).",
    )
    reset_grace_minutes: float = Field(
        2,
        ge=0,
        le=60,
        description="Added to the provider's reported reset before the retry is due, in minutes.",
    )
    handoff_after_minutes: float | None = Field(
        None,
        gt=0,
        le=10080,
        description="Hand the item to one of its agent's fallback agents (agents.<name>.fallback) "
        "instead of waiting, when its retry would wait longer than this, in minutes. Without "
        "it: always wait.",
    )
    max_handoffs: int = Field(
        2,
        ge=1,
        le=10,
        description="An item is handed off this many times at most (a person's handoffs "
        "count too); past it, its retries wait.",
    )


class WorkerSettings(_Section):
    lease_seconds: float = Field(
        60, gt=0, le=86400, description="How long a claim stays valid without renewal."
    )
    heartbeat_seconds: float = Field(
        20,
        gt=0,
        le=86400,
        description="How often a worker renews its lease; below leaseSeconds less the lease "
        "guard's margin (a quarter of the lease, at most 10 s).",
    )
    item_timeout_minutes: float = Field(
        60,
        gt=0,
        le=MAX_ITEM_TIMEOUT_SECONDS / 60,
        description="Default limit on one run; an item may set its own.",
    )
    poll_seconds: float = Field(
        5, gt=0, le=3600, description="How often an idle worker looks for work."
    )
    wake_ups: bool = Field(
        True,
        description="Whether an idle worker starts new work at once, told by the store "
        "(PostgreSQL LISTEN/NOTIFY, SQLite a local socket), and a retry when it is due, rather "
        "than at its next poll. false: it only polls.",
    )
    concurrency: int = Field(1, ge=1, le=64, description="Items one worker runs at once.")
    default_agent: str = Field("claude", description="Agent used for items that do not name one.")
    max_requeues: int = Field(
        3,
        ge=0,
        le=100,
        description="How often the reaper may hand an item of a lost worker to another one.",
    )
    workspace_mode: Literal["current", "worktree", "directory"] = Field(
        "current",
        description="Where agents work: the project directory (one at a time), a git worktree "
        "per item, or a folder per item.",
    )
    process_crash: ProcessCrashPolicy = Field(default_factory=ProcessCrashPolicy)
    usage_failure: UsageFailurePolicy = Field(
        default_factory=UsageFailurePolicy,
        description="What a run classified rate-limited or provider-unavailable leads to; no "
        "other outcome (never auth, permission, billing, context-limit, agent failure, timeout, "
        "cancellation or fencing). A retry is due at the provider's reported reset plus "
        "resetGraceMinutes, capped at maxRetryMinutes; without a reported reset, after "
        "initialRetryMinutes x backoffMultiplier^(n-1), capped at maxRetryMinutes, with a small "
        "jitter. maxAttempts counts usage retries on their own counter.",
    )
    label: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9._-]{1,40}$",
        description="A name for this project's workers in `wrighty workers` and `status` "
        "(letters, digits, '.', '_', '-'). wrighty never uses host or user names.",
    )
    registry_retention_hours: float = Field(
        24, gt=0, le=8760, description="Forget registered workers silent for this long."
    )
    sandbox: SandboxSetting = Field(
        "none",
        description='Where every agent and its checks run: "none" (as the person, today\'s '
        "way) or a bubblewrap profile (docs/sandbox.md); agents.<name>.sandbox overrides it.",
    )


class StatusSettings(_Section):
    """Health thresholds of `wrighty status`; a command-line option overrides each."""

    max_queue_wait_seconds: float | None = Field(
        None,
        gt=0,
        le=MAX_QUEUE_WAIT_SECONDS,
        description="Unhealthy when an item has waited longer than this.",
    )
    min_workers: int | None = Field(
        None, ge=0, le=10000, description="Unhealthy with fewer live workers than this."
    )
    worker_max_age_seconds: float = Field(
        60,
        gt=0,
        le=MAX_WORKER_AGE_SECONDS,
        description="A worker is live if its heartbeat is this recent.",
    )
    max_expired_leases: int | None = Field(
        None, ge=0, description="Unhealthy with more running items whose lease expired."
    )
    max_needs_attention: int | None = Field(
        None, ge=0, description="Unhealthy with more items waiting for a person."
    )
    max_open_circuits: int | None = Field(
        None,
        ge=0,
        le=10000,
        description="Unhealthy with more provider circuits open or half-open than this.",
    )
    max_notify_age_seconds: float | None = Field(
        None,
        gt=0,
        le=MAX_QUEUE_WAIT_SECONDS,
        description="Unhealthy when an undelivered notification (notify) is older than this.",
    )
    max_review_wait_seconds: float | None = Field(
        None,
        gt=0,
        le=MAX_QUEUE_WAIT_SECONDS,
        description="Unhealthy when an item has waited longer than this in review.",
    )


MAX_BUDGET_USD = 1_000_000  # a bound for typos, not a spending policy
MAX_BUDGET_TOKENS = 10**12
MAX_PRICE_PER_MTOK = 10_000
MAX_MODEL_NAME = 200  # characters of a `pricing` key


class BudgetLimit(_Section):
    """A budget's bounds; either or both. A run's spend counts every token kind."""

    max_cost_usd: float | None = Field(
        None,
        gt=0,
        le=MAX_BUDGET_USD,
        description="Spend at most this many US dollars (the vendor's reported cost, or the "
        "estimate from `pricing`; a run whose cost is unknown counts only its tokens).",
    )
    max_tokens: int | None = Field(
        None,
        gt=0,
        le=MAX_BUDGET_TOKENS,
        description="Spend at most this many tokens: input, output, cache read and write.",
    )


class BudgetSettings(_Section):
    per_item: BudgetLimit = Field(
        default_factory=BudgetLimit,
        description="Each item's budget across all its runs; `create --max-cost-usd` / "
        "`--max-tokens` override it for one item. Past it, the run is stopped and the item "
        "goes to needs-attention (budget-exceeded) with its session kept.",
    )
    per_day: dict[str, BudgetLimit] = Field(
        default_factory=dict,
        description='Each agent\'s budget per day, keyed by agent name; "*" for every agent '
        "without an entry of its own (each agent counted separately). A spent budget holds "
        "the agent's items queued until the next day.",
    )
    day_starts_at: str = Field(
        "00:00",
        pattern=r"^([01][0-9]|2[0-3]):[0-5][0-9]$",
        description="When a budget day begins, as HH:MM in timeZone.",
    )
    time_zone: str = Field(
        "UTC", description="The IANA time zone of dayStartsAt, such as Europe/Berlin."
    )


class ModelPrice(_Section):
    """US dollars per million tokens of each kind."""

    input_per_mtok: float = Field(..., ge=0, le=MAX_PRICE_PER_MTOK)
    output_per_mtok: float = Field(..., ge=0, le=MAX_PRICE_PER_MTOK)
    cache_read_per_mtok: float = Field(0, ge=0, le=MAX_PRICE_PER_MTOK)
    cache_write_per_mtok: float = Field(0, ge=0, le=MAX_PRICE_PER_MTOK)


class CheckSettings(_Section):
    name: str = Field(
        ...,
        pattern=f"^{CHECK_NAME.pattern}$",
        description="What the check is called in reasons, events, `show` and on the command line "
        "(1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit).",
    )
    argv: list[str] = Field(
        ...,
        min_length=1,
        description="The program and its arguments, run with no shell in the item's workspace.",
    )
    timeout_minutes: float = Field(
        DEFAULT_CHECK_TIMEOUT_SECONDS / 60,
        ge=MIN_CHECK_TIMEOUT_SECONDS / 60,
        le=MAX_ITEM_TIMEOUT_SECONDS / 60,
        description="How long the check may run before its whole process tree is stopped.",
    )
    on_base: bool = Field(
        True,
        description="When the check fails after an agent's run, run it on the item's base "
        "commit too: a check that fails there as well is not the agent's to fix (no fix turn "
        "is spent on it).",
    )


class AgentVerifySettings(_Section):
    checks: list[CheckSettings] = Field(
        default_factory=list,
        max_length=MAX_CHECKS,
        description="This agent's own checks: they run after the project's, for its items only.",
    )


class VerifySettings(AgentVerifySettings):
    checks: list[CheckSettings] = Field(
        default_factory=list,
        max_length=MAX_CHECKS,
        description="The project's checks, in the order they run after every succeeded run.",
    )
    max_fix_turns: int = Field(
        DEFAULT_FIX_TURNS,
        ge=0,
        le=MAX_FIX_TURNS,
        description="How many fix turns (the session resumed with the failing checks' output) "
        "an item gets before a person looks.",
    )
    feedback_bytes: int = Field(
        DEFAULT_FEEDBACK_BYTES,
        ge=MIN_FEEDBACK_BYTES,
        le=MAX_FEEDBACK_BYTES,
        description="The most a fix turn's prompt may hold, in UTF-8 bytes.",
    )
    sandbox: CheckSandboxSetting = Field(
        "agent",
        description='Where checks and completion.integrateCommand run: "agent" (in the item\'s '
        'agent\'s sandbox), "none" (as wrighty) or a bubblewrap profile (docs/sandbox.md).',
    )


class AgentSettings(_Section):
    adapter: AdapterName | None = Field(
        None, description="Which adapter runs this agent; defaults to the agent's name."
    )
    executable: str | None = Field(
        None, description="Program to start; defaults to the vendor's usual command on PATH."
    )
    args: list[str] = Field(
        default_factory=list, description="Extra arguments after wrighty's own."
    )
    env: dict[str, str] = Field(
        default_factory=dict, description="Environment variables added for the agent."
    )
    command: list[str] | None = Field(
        None, description="command adapter: the program and its arguments (argv, no shell)."
    )
    resume_command: list[str] | None = Field(
        None, description="command adapter: argv that resumes a run's session, if it can."
    )
    permission: Literal["workspace", "full"] = Field(
        "workspace",
        description="Vendor adapters: what the agent may do unasked. workspace: edit files in "
        "its workspace; full: everything (the vendor's bypass flag). Opt in with care.",
    )
    resume: bool = Field(
        True, description="Whether a retry may resume the recorded session (false: never)."
    )
    account: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9._@-]{1,80}$",
        description="A label for the provider account this agent uses. Under "
        "worker.usageFailure, agents that name the same account share one provider circuit, "
        "across installations: a refusal stops them all until the reset. Without it, each agent "
        "of each installation has its own. A label only: never a key or a secret.",
    )

    fallback: list[str] = Field(
        default_factory=list,
        max_length=8,
        description="Under worker.usageFailure.handoffAfterMinutes: the agents, in order, an item "
        "of this agent is handed to when its provider's reset is further away than that and the "
        "agent's circuit is closed and its day budget not spent (docs/handoff.md).",
    )

    max_concurrent: int | None = Field(
        None,
        ge=1,
        le=MAX_CONCURRENT,
        description="At most this many of this agent's items run at once, across every worker "
        "and installation on the store (checked inside the claim). Without it: no limit but "
        "the workers' slots.",
    )

    verify: AgentVerifySettings | None = Field(
        None, description="Checks of this agent's own, run after the project's (verify.checks)."
    )

    sandbox: SandboxSetting | None = Field(
        None,
        description='Where this agent and its items\' checks run: "none" or a bubblewrap '
        "profile (docs/sandbox.md); null: worker.sandbox.",
    )

    def adapter_for(self, name: str) -> str:
        return self.adapter or name


def sandbox_of(config: WrightyConfig, agent: str) -> BubblewrapProfile | None:
    """The sandbox ``agent`` runs in (None: none)."""
    settings = config.agents.get(agent)
    chosen = settings.sandbox if settings is not None and settings.sandbox is not None else None
    if chosen is None:
        chosen = config.worker.sandbox
    return chosen if isinstance(chosen, BubblewrapProfile) else None


class LabelLimit(_Section):
    max_concurrent: int = Field(
        ...,
        ge=1,
        le=MAX_CONCURRENT,
        description="At most this many items with the label run at once, across every worker "
        "and installation on the store (checked inside the claim).",
    )


class LimitSettings(_Section):
    labels: dict[str, LabelLimit] = Field(
        default_factory=dict,
        description="Concurrency limits by item label (`create --label`), keyed by label; an "
        "item with several labels waits while any of its limits is reached.",
        json_schema_extra={"propertyNames": {"pattern": LABEL_PATTERN}},
    )


class CommitAuthor(_Section):
    name: str = Field(
        ..., min_length=1, max_length=MAX_IDENTITY, description="The commits' author name."
    )
    email: str = Field(
        ..., min_length=1, max_length=MAX_IDENTITY, description="The commits' author email."
    )


class CompletionSettings(_Section):
    """What becomes of a worktree item's change (docs/work-product.md)."""

    branch_prefix: str = Field(
        DEFAULT_BRANCH_PREFIX,
        max_length=MAX_BRANCH_PREFIX,
        description="The start of every item's branch name: <branchPrefix><id>-<slug of the "
        "title>. Letters, digits, '.', '_', '-' and '/', as git accepts in a branch name.",
    )
    base: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_BRANCH_PREFIX * 2,
        description="The git ref (branch, tag or commit) each item's branch starts from; null: "
        "the project's HEAD when the item's worktree is made.",
    )
    commit: Literal["wrighty", "agent", "none"] = Field(
        "wrighty",
        description="Who commits a done run's changes on its branch: wrighty (git add -A and a "
        "commit naming the item), the agent itself, or none.",
    )
    author: CommitAuthor | None = Field(
        None,
        description="The identity of wrighty's commits; null: git's own (user.name, user.email).",
    )
    review: Literal["auto", "person"] = Field(
        "auto",
        description="Who finishes an item whose run is done (and verified): auto, it is done; "
        "person, it waits in review for `wrighty accept` or `wrighty reject`.",
    )
    hooks: Literal["run", "skip"] = Field(
        "skip",
        description="Whether the project's git hooks (pre-commit, commit-msg, pre-merge-commit, "
        "post-merge, pre-push...) run in wrighty's own commit, merge and push: run, whatever is "
        "in the repository's hooks folder (which an agent can write); skip. No other program "
        "the repository names ever runs (docs/work-product.md#what-git-runs).",
    )
    max_rejections: int = Field(
        DEFAULT_MAX_REJECTIONS,
        ge=1,
        le=MAX_MAX_REJECTIONS,
        description="How many times `wrighty reject` may send one item back to its agent.",
    )
    integrate: Literal["none", "merge", "push", "command", "github-pr"] = Field(
        "none",
        description="What accepting an item does with its branch (docs/work-product.md"
        "#integration): nothing (none), merge it into the project's checked-out branch, push it "
        "to `remote`, run integrateCommand, or push it and open a pull request (github-pr, "
        "docs/sources.md#a-pull-request-as-the-integration).",
    )
    pull_request: PullRequestSettings | None = Field(
        None,
        description="integrate github-pr: the repository pull requests are opened in (default: "
        "the one GitHub source's).",
    )
    merge: Literal["ff", "ff-only", "no-ff"] = Field(
        "ff",
        description="How integrate merge merges: ff (a fast-forward when possible, else a merge "
        "commit), ff-only (a fast-forward or nothing), no-ff (always a merge commit).",
    )
    remote: str = Field(
        DEFAULT_REMOTE,
        pattern=f"^{REMOTE_NAME.pattern}$",
        description="The git remote integrate push pushes the item's branch to (a name `git "
        "remote` lists: letters, digits, '.', '_', '-' and '/', not starting with '-').",
    )
    integrate_command: list[Annotated[str, Field(max_length=MAX_COMMAND_ARG_CHARS)]] | None = Field(
        None,
        min_length=1,
        max_length=MAX_COMMAND_ARGS,
        description="integrate command: the program and its arguments (argv, no shell), run "
        "in the item's worktree with WRIGHTY_ITEM_ID, WRIGHTY_ITEM_TITLE, WRIGHTY_BRANCH and "
        "WRIGHTY_BASE set and the item's summary on stdin; the last URL it prints is kept.",
    )
    integrate_timeout_seconds: float = Field(
        DEFAULT_TIMEOUT_SECONDS,
        ge=MIN_TIMEOUT_SECONDS,
        le=MAX_TIMEOUT_SECONDS,
        description="How long a push or integrateCommand may take before it is stopped.",
    )
    update: Literal["merge", "rebase"] = Field(
        "merge",
        description="How an accepted item's branch is brought up to date with its target before "
        "it lands (docs/landing.md): merge (the target merged into the branch) or rebase (the "
        "branch replayed on the target; one that conflicts is merged instead).",
    )
    squash: bool = Field(
        False,
        description="Whether an item lands as one commit on its target (its title, the task's "
        "first line, its trailers and the checks it passed) rather than with its branch's "
        "commits.",
    )
    stack: bool = Field(
        False,
        description="Whether an item that comes after one waiting in review or landing starts "
        "from that item's branch rather than waiting for it to be done (docs/landing.md).",
    )
    review_after_fix: Literal["person", "auto"] = Field(
        "person",
        description="Where an item goes when a fix turn during its landing (a conflict, a red "
        "check on the updated branch) passed its checks: back to a person's review (person), "
        "or straight on to land (auto).",
    )


class ServeSettings(_Section):
    public_url: str | None = Field(
        None,
        max_length=MAX_PUBLIC_URL_CHARS,
        description="The address a person's phone reaches `wrighty serve` at (behind their own "
        "TLS proxy or private network: docs/web.md#links-from-notices); every notice about an "
        "item then links to its page. Never holds the token.",
    )

    @field_validator("public_url")
    @classmethod
    def _public_url_reads(cls, value: str | None) -> str | None:
        return None if value is None else check_public_url(value)


class WrightyConfig(_Section):
    schema_uri: str | None = Field(None, alias="$schema", description="Editor schema hint.")
    schema_version: Literal[1] = Field(SCHEMA_VERSION, description="Version of this file's layout.")
    store: StoreSettings = Field(default_factory=StoreSettings)
    worker: WorkerSettings = Field(default_factory=WorkerSettings)
    status: StatusSettings = Field(default_factory=StatusSettings)
    agents: dict[str, AgentSettings] = Field(
        default_factory=dict,
        description="Per-agent settings, keyed by the name items use.",
        json_schema_extra={"propertyNames": {"pattern": AGENT_NAME_PATTERN}},
    )
    budgets: BudgetSettings = Field(default_factory=BudgetSettings)
    limits: LimitSettings = Field(
        default_factory=LimitSettings,
        description="Concurrency limits beyond each agent's own (agents.<name>.maxConcurrent).",
    )
    notify: NotifySettings = Field(default_factory=NotifySettings)
    serve: ServeSettings = Field(
        default_factory=ServeSettings, description="The web console (`wrighty serve`)."
    )
    verify: VerifySettings | None = Field(
        None,
        description="The project's own checks, run after every succeeded run: an item is done "
        "only when they all pass; a failure resumes the agent's session with their output "
        "(docs/verify.md). Without it, a succeeded run is done.",
    )
    completion: CompletionSettings = Field(
        default_factory=CompletionSettings,
        description="Branches and commits of worktree items (worker.workspaceMode worktree): "
        "docs/work-product.md.",
    )
    sources: SourcesSettings = Field(
        default_factory=SourcesSettings,
        description="Trackers whose labelled issues become items (docs/sources.md).",
    )
    pricing: dict[str, ModelPrice] = Field(
        default_factory=dict,
        description='Estimated prices by model name ("*" for any other), for runs whose '
        "vendor reports no cost; such costs are labelled estimated. wrighty ships no price "
        "list: prices change.",
        json_schema_extra={"propertyNames": {"minLength": 1, "maxLength": MAX_MODEL_NAME}},
    )

    def agent_names(self) -> list[str]:
        return sorted(set(ADAPTERS) | set(self.agents))
