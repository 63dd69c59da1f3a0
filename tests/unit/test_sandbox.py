"""The bubblewrap command line of a sandboxed agent or check (wrighty/domain/sandbox.py)."""

from __future__ import annotations

from pathlib import Path
from pathlib import PurePosixPath as P

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wrighty.domain.sandbox import (
    GitPlaces,
    PathKind,
    Places,
    Profile,
    Sandbox,
    bubblewrap,
)

PROJECT = P("/work/project")
STATE = PROJECT / ".wrighty"
WORKTREE = STATE / "worktrees" / "12"
HOME = P("/home/ada")
GIT = GitPlaces(PROJECT / ".git", PROJECT / ".git" / "worktrees" / "12", "wrighty/12-fix")
FOLDERS = {
    PROJECT, STATE, WORKTREE, HOME, HOME / ".ssh", HOME / ".aws", HOME / ".config" / "gcloud",
    PROJECT / ".git", PROJECT / ".git" / "worktrees" / "12", PROJECT / ".git" / "objects",
    PROJECT / ".git" / "hooks", PROJECT / ".git" / "refs" / "heads" / "wrighty",
}  # fmt: skip
FILES = {HOME / ".netrc", PROJECT / "wrighty.json", PROJECT / ".git" / "config"}


def on_disk(path: P) -> PathKind:
    if path in FOLDERS:
        return "dir"
    return "file" if path in FILES else None


def places(**more: object) -> Places:
    fields: dict[str, object] = {
        "workspace": WORKTREE,
        "project_root": PROJECT,
        "state_dir": STATE,
        "home": HOME,
        "git": GIT,
        "read_only": (PROJECT / "wrighty.json",),
    }
    fields.update(more)
    return Places(**fields)  # type: ignore[arg-type]


def mounts(sandbox: Sandbox) -> list[tuple[str, ...]]:
    """The mount options in order, each with its arguments."""
    arity = {"--bind": 2, "--ro-bind": 2, "--tmpfs": 1, "--remount-ro": 1, "--dev": 1}
    arity |= {"--proc": 1, "--chdir": 1}
    words = list(sandbox.prefix[1:])
    found: list[tuple[str, ...]] = []
    while words:
        option = words.pop(0)
        count = arity.get(option, 0)
        found.append((option, *words[:count]))
        del words[:count]
    return found


def position(found: list[tuple[str, ...]], mount: tuple[str, ...]) -> int:
    assert mount in found, (mount, found)
    return found.index(mount)


def test_the_system_is_read_only_with_a_private_tmp_and_the_workspace_writable() -> None:
    sandbox = bubblewrap(Profile(), places(), on_disk)
    found = mounts(sandbox)
    assert sandbox.prefix[0] == "bwrap"
    assert found[:4] == [("--ro-bind", "/", "/"), ("--dev", "/dev"), ("--proc", "/proc"),
                         ("--tmpfs", "/tmp")]  # fmt: skip
    ws = str(WORKTREE)
    # the state folder (the store, other worktrees) hidden, then the worktree bound inside it
    assert position(found, ("--tmpfs", str(STATE))) < position(found, ("--bind", ws, ws))
    assert ("--chdir", ws) in found
    assert sandbox.argv(["agent", "--flag"])[-3:] == ("--", "agent", "--flag")


def test_secrets_are_hidden_and_wrighty_json_is_read_only() -> None:
    found = mounts(bubblewrap(Profile(), places(), on_disk))
    for folder in (".ssh", ".aws", ".config/gcloud"):
        assert ("--tmpfs", str(HOME / folder)) in found
        assert ("--remount-ro", str(HOME / folder)) in found
    assert ("--ro-bind", "/dev/null", str(HOME / ".netrc")) in found
    config = str(PROJECT / "wrighty.json")
    assert ("--ro-bind", config, config) in found
    # absent secrets are not mounted (bubblewrap cannot bind what is not there)
    assert not [mount for mount in found if str(HOME / ".kube") in mount]


def test_a_worktree_commit_can_write_its_branch_folder_but_not_git_config_or_hooks() -> None:
    found = mounts(bubblewrap(Profile(), places(), on_disk))
    git = PROJECT / ".git"
    for writable in (git / "worktrees" / "12", git / "objects", git / "refs/heads/wrighty"):
        assert ("--bind", str(writable), str(writable)) in found
    for read_only in (git / "config", git / "hooks"):
        assert ("--ro-bind", str(read_only), str(read_only)) in found
    assert not [mount for mount in found if str(git / "refs" / "heads") == mount[-1]]


def test_in_current_mode_the_projects_git_config_and_hooks_stay_read_only() -> None:
    git = GitPlaces(PROJECT / ".git")
    found = mounts(bubblewrap(Profile(), places(workspace=PROJECT, git=git), on_disk))
    project = str(PROJECT)
    bound = position(found, ("--bind", project, project))
    for read_only in (PROJECT / ".git" / "config", PROJECT / ".git" / "hooks"):
        assert position(found, ("--ro-bind", str(read_only), str(read_only))) > bound
    assert position(found, ("--tmpfs", str(STATE))) > bound  # the store, inside the project
    assert ("--bind", str(PROJECT / ".git" / "objects"), str(PROJECT / ".git" / "objects")) not in (
        found
    )


def test_network_none_unshares_the_network_and_host_does_not() -> None:
    assert "--unshare-net" in bubblewrap(Profile(network="none"), places(), on_disk).prefix
    prefix = bubblewrap(Profile(), places(), on_disk).prefix
    assert "--unshare-net" not in prefix
    for option in ("--unshare-pid", "--die-with-parent", "--new-session"):
        assert option in prefix


def test_profile_paths_are_expanded_and_hiding_beats_writing() -> None:
    cache = HOME / ".cache" / "pip"
    profile = Profile(writable=("~/.cache/pip", "~/.ssh"), hide=("/work/project/secrets",))

    def kind(path: P) -> PathKind:
        return "dir" if path in {cache, PROJECT / "secrets"} else on_disk(path)

    found = mounts(bubblewrap(profile, places(), kind))
    assert ("--bind", str(cache), str(cache)) in found
    assert ("--tmpfs", str(PROJECT / "secrets")) in found
    assert ("--bind", str(HOME / ".ssh"), str(HOME / ".ssh")) not in found  # hidden wins


def test_only_the_allowed_variables_are_passed_on() -> None:
    sandbox = bubblewrap(Profile(env=("EXTRA",)), places(), on_disk, passed=("WRIGHTY_RUN_ID",))
    environ = {
        "PATH": "/bin", "HOME": "/home/ada", "LC_ALL": "C.UTF-8", "EXTRA": "1",
        "WRIGHTY_RUN_ID": "r", "AWS_SECRET_ACCESS_KEY": "k", "GITHUB_TOKEN": "t",
    }  # fmt: skip
    assert sandbox.environment(environ) == {
        "PATH": "/bin", "HOME": "/home/ada", "LC_ALL": "C.UTF-8", "EXTRA": "1",
        "WRIGHTY_RUN_ID": "r",
    }  # fmt: skip
    # no value ever goes on bubblewrap's command line (ps shows it to everyone)
    assert not any("AWS" in word or "GITHUB" in word for word in sandbox.prefix)


NAMES = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00/"), min_size=1
).filter(lambda name: name not in (".", ".."))


@given(workspace_name=NAMES, home_name=NAMES)
def test_hostile_path_names_stay_one_argument_each(workspace_name: str, home_name: str) -> None:
    workspace = STATE / "worktrees" / workspace_name
    home = P("/home") / home_name
    folders = {workspace, home, home / ".ssh", STATE, PROJECT}

    def kind(path: P) -> PathKind:
        return "dir" if path in folders else None

    sandbox = bubblewrap(
        Profile(), places(workspace=workspace, home=home, git=None, read_only=()), kind
    )
    found = mounts(sandbox)
    assert ("--bind", str(workspace), str(workspace)) in found
    assert ("--tmpfs", str(home / ".ssh")) in found
    assert ("--chdir", str(workspace)) in found
    # every path is absolute: none can be read as an option
    assert all(word.startswith("/") for mount in found for word in mount[1:])


def test_checks_run_in_the_agents_sandbox_unless_verify_sandbox_says_otherwise() -> None:
    from wrighty.config import WrightyConfig
    from wrighty.config.translate import check_sandbox_profile

    def config(**verify: object) -> WrightyConfig:
        return WrightyConfig.model_validate(
            {
                "worker": {"defaultAgent": "maker", "sandbox": {"kind": "bubblewrap"}},
                "agents": {
                    "maker": {"adapter": "command", "command": ["x"]},
                    "open": {"adapter": "command", "command": ["x"], "sandbox": "none"},
                },
                "verify": {"checks": [{"name": "t", "argv": ["true"]}], **verify},
            }
        )

    assert check_sandbox_profile(config(), "maker") == ("worker.sandbox", Profile())
    assert check_sandbox_profile(config(), "open") is None  # the agent's: none
    assert check_sandbox_profile(config(sandbox="none"), "maker") is None
    own = {"kind": "bubblewrap", "network": "none", "env": ["CI"]}
    assert check_sandbox_profile(config(sandbox=own), "open") == (
        "verify.sandbox",
        Profile(network="none", env=("CI",)),
    )


def test_check_sandboxes_start_each_program_once_and_refuse_one_that_cannot(
    tmp_path: Path,
) -> None:
    from wrighty.config import WrightyConfig
    from wrighty.errors import WrightyError
    from wrighty.services.sandboxes import Around, CheckSandboxes

    document = {
        "worker": {"defaultAgent": "a", "sandbox": {"kind": "bubblewrap"}},
        "agents": {
            "a": {"adapter": "command", "command": ["x"]},
            "b": {"adapter": "command", "command": ["x"]},
            "c": {"adapter": "command", "command": ["x"], "sandbox": "none"},
        },
    }
    around = Around(tmp_path, None, None, home=tmp_path / "home")
    started: list[str] = []

    def probe(program: str) -> str | None:
        started.append(program)
        return None

    sandboxes = CheckSandboxes(WrightyConfig.model_validate(document), around, probe=probe)
    assert started == ["bwrap"]  # a, b and the default share one program; c has none
    assert sandboxes.of("c") is None
    maker = sandboxes.of("")  # an item that names no agent: the default agent's
    assert maker is not None
    assert maker.setting == "worker.sandbox"

    with pytest.raises(WrightyError, match=r"^worker.sandbox: bubblewrap 'bwrap' is not installed"):
        CheckSandboxes(
            WrightyConfig.model_validate(document), around, probe=lambda _: "is not installed"
        )
