"""The work product's port: what a worker and the services ask of the place an item's change
is made and kept (docs/work-product.md), as one small Protocol, and git's implementation of
it. A workspace is prepared before a run, the branch guard and the commit come after a done
one, the change's stat goes with an item ready for review, and an accepted item's branch is
integrated. A next implementation (a sandbox, another version control) passes the same
contract test (tests/integration/test_work_product_contract.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from wrighty.domain.model import Item, Session
from wrighty.domain.work_product import CommitResult, Completion
from wrighty.workproduct.branch import Guarded, keep_on_branch
from wrighty.workproduct.commit import complete
from wrighty.workproduct.diff import change_stat
from wrighty.workproduct.integrate import Integrated, IntegrationTarget, integrate
from wrighty.workproduct.worktree import Workspace, choose_workspace


class WorkProduct(Protocol):
    """Where an item's agent works and what becomes of its change."""

    def prepare(
        self,
        mode: str,
        *,
        item: Item,
        session: Session | None,
        resume: bool = False,
        start_over: bool = False,
    ) -> Workspace:
        """The workspace for ``item``'s next run (worker.workspaceMode ``mode``), made if it
        must be (WorkspaceError when it cannot)."""
        ...

    def keep_on_branch(self, workspace: Path, branch: str) -> Guarded:
        """The branch guard: the workspace put back on the item's ``branch``, or why not."""
        ...

    def commit(
        self, workspace: Path, *, item: Item, run_id: str, base_commit: str | None
    ) -> CommitResult:
        """What completion.commit says, done with a done run's ``workspace``."""
        ...

    def change_stat(self, workspace: Path, base_commit: str) -> str | None:
        """The stat of the change in ``workspace`` against ``base_commit`` (None: unknown)."""
        ...

    def integrate(self, target: IntegrationTarget) -> Integrated:
        """An accepted item's branch integrated as completion.integrate says
        (IntegrationError when it is refused or fails)."""
        ...


@dataclass(frozen=True)
class GitWorkProduct:
    """The work product in the project's git repository at ``project_root``, wrighty's own
    folders in ``state_dir``, as ``completion`` says."""

    project_root: Path
    state_dir: Path
    completion: Completion

    def prepare(
        self,
        mode: str,
        *,
        item: Item,
        session: Session | None,
        resume: bool = False,
        start_over: bool = False,
    ) -> Workspace:
        return choose_workspace(
            mode,
            project_root=self.project_root,
            state_dir=self.state_dir,
            item=item,
            session=session,
            resume=resume,
            start_over=start_over,
            completion=self.completion,
        )

    def keep_on_branch(self, workspace: Path, branch: str) -> Guarded:
        return keep_on_branch(self.project_root, workspace, branch)

    def commit(
        self, workspace: Path, *, item: Item, run_id: str, base_commit: str | None
    ) -> CommitResult:
        return complete(
            workspace, self.completion, item=item, run_id=run_id, base_commit=base_commit
        )

    def change_stat(self, workspace: Path, base_commit: str) -> str | None:
        return change_stat(workspace, base_commit)

    def integrate(self, target: IntegrationTarget) -> Integrated:
        return integrate(
            self.project_root,
            self.completion.integration,
            target,
            author_name=self.completion.author_name,
            author_email=self.completion.author_email,
            hooks=self.completion.hooks == "run",
        )
