"""The JSON documents of `wrighty workspaces --json` and `wrighty workspaces clean --json`
(docs/json.md), apart from operator/documents.py: only those commands read them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wrighty.domain.workspaces import Workspace
    from wrighty.services.workspaces import Cleaned


def workspace_json(workspace: Workspace) -> dict[str, Any]:
    """One workspace, as `wrighty workspaces --json` lists it (docs/json.md)."""
    return {
        "item_id": workspace.item_id,
        "state": workspace.state.value,
        "mode": workspace.mode.value,
        "path": workspace.path,
        "exists": workspace.exists,
        "branch": workspace.branch,
        "branch_exists": workspace.branch_exists,
        "base": workspace.base,
        "ahead": workspace.ahead,
        "behind": workspace.behind,
        "dirty": workspace.dirty,
        "merged": workspace.merged,
        "size_bytes": workspace.size_bytes,
        "size_complete": workspace.size_complete,
        "note": workspace.note,
    }


def cleaned_json(cleaned: Cleaned) -> dict[str, Any]:
    """What `wrighty workspaces clean --json` did with one workspace (docs/json.md)."""
    workspace = cleaned.workspace
    return {
        "item_id": workspace.item_id,
        "mode": workspace.mode.value,
        "path": workspace.path,
        "branch": workspace.branch,
        "outcome": cleaned.outcome.value,
        "removed_workspace": cleaned.removed_workspace,
        "deleted_branch": cleaned.deleted_branch,
        "removed_logs": cleaned.removed_logs,
        "reason": cleaned.reason,
    }
