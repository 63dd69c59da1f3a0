"""Setting a project up for wrighty: the config file, the state directory, and git told to
ignore it."""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any

from wrighty.config import (
    SCHEMA_FILENAME,
    STATE_DIRNAME,
    WrightyConfig,
    config_json_schema,
    default_config_document,
)
from wrighty.errors import WrightyError
from wrighty.files import link_new

_GITIGNORE_ENTRY = f"{STATE_DIRNAME}/"


# `wrighty init --example`: the example agent that installs with wrighty, as the default agent,
# so that a new project runs items before any coding agent is installed (docs/cli.md#wrighty-init).
EXAMPLE_AGENT = "example"
_EXAMPLE_COMMAND = ["wrighty-example-agent"]


def config_document(store_url: str | None, *, example: bool = False) -> dict[str, Any]:
    document = default_config_document()
    if example:
        document["worker"]["defaultAgent"] = EXAMPLE_AGENT
        document["agents"] = {
            EXAMPLE_AGENT: {
                "adapter": "command",
                "command": _EXAMPLE_COMMAND,
                "resumeCommand": _EXAMPLE_COMMAND,
            }
        }
    if store_url is not None:
        document["store"] = {"url": store_url}
    WrightyConfig.model_validate(document)  # the defaults must always validate
    return document


def write_json_file(
    path: Path, document: dict[str, Any], *, mode: int = 0o600, replace: bool = True
) -> bool:
    """Write ``document`` atomically: a reader sees the old file or the new one.

    With ``replace=False`` an existing file is kept; False then says nothing was written (of
    processes racing to create the file, exactly one writes it).
    """
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        descriptor = os.open(temporary, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, mode)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if not replace:
            return link_new(temporary, path)
        os.replace(temporary, path)
    except OSError as error:
        temporary.unlink(missing_ok=True)
        raise WrightyError(f"{path}: cannot write ({error.strerror or error})") from None
    return True


def write_schema_copy(project_root: Path) -> Path:
    """Keep .wrighty/wrighty.schema.json in step with this version, for editors."""
    state_dir = project_root / STATE_DIRNAME
    state_dir.mkdir(mode=0o700, exist_ok=True)
    path = state_dir / SCHEMA_FILENAME
    write_json_file(path, config_json_schema())
    return path


def git_worktree_root(start: Path) -> Path | None:
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return None


def ensure_ignored(project_root: Path) -> Path | None:
    """Have git ignore .wrighty/ inside a git work tree: the file the entry was added to, or
    None (not in git, or already ignored by the project's .gitignore or by that file).

    The entry goes to the repository's own exclude file (``info/exclude``, shared by its
    worktrees), not the tracked .gitignore: nothing tracked changes, so a merge into the
    project (completion.integrate merge) is not refused for it (docs/cli.md#wrighty-init)."""
    top = git_worktree_root(project_root)
    if top is None:
        return None
    if _lists_state_dir(project_root / ".gitignore"):
        return None
    path = _exclude_file(project_root, top)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # racing inits: one adds the entry, once
        handle.seek(0)
        existing = handle.read()
        if STATE_DIRNAME in _entries(existing):
            return None
        separator = "" if not existing or existing.endswith("\n") else "\n"
        handle.write(f"{separator}{_GITIGNORE_ENTRY}\n")
    return path


def _exclude_file(project_root: Path, top: Path) -> Path:
    """The repository's info/exclude, as git finds it (a linked worktree's is its main
    repository's); ``top``'s .git/info/exclude when git cannot say."""
    from wrighty.workproduct.runner import GitError, run_git

    try:
        found = run_git(project_root, "rev-parse", "--git-path", "info/exclude")
    except GitError:
        found = None
    if found is not None and found.ok and found.stdout.strip():
        return Path(os.path.normpath(project_root / found.stdout.strip()))
    return top / ".git" / "info" / "exclude"


def _lists_state_dir(path: Path) -> bool:
    try:
        return STATE_DIRNAME in _entries(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return False


def _entries(text: str) -> set[str]:
    return {line.strip().strip("/") for line in text.splitlines()}
