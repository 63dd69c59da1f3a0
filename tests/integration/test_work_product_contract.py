"""The work product's contract (wrighty/workproduct/port.py): what every `WorkProduct` does
for an item's life, on a real temporary git repository. A workspace is prepared on the item's
branch and kept for its next run; the branch guard brings a detached HEAD back; the commit
takes what the run left, once; the change's stat names it; and the accepted branch is
integrated into the project, or refused with the project left as it was. Each implementation
is one entry of ``IMPLEMENTATIONS``; all of them pass every test here."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.helpers import git
from wrighty.domain.integration import Integration
from wrighty.domain.model import Item, Session
from wrighty.domain.states import ItemState
from wrighty.domain.work_product import Completion, Ending
from wrighty.workproduct.integrate import IntegrationError, IntegrationTarget
from wrighty.workproduct.port import GitWorkProduct, WorkProduct

AT = datetime(2026, 1, 1, tzinfo=UTC)
ITEM = Item(
    id=7, title="Fix the login page", body="body", agent=None, timeout_seconds=None,
    workspace=None, state=ItemState.RUNNING, generation=1, claimed_by="w", lease_expires_at=AT,
    queued_at=AT, not_before=None, reason_code=None, reason=None, next_action=None,
    crash_retries=0, requeues=0, created_at=AT, updated_at=AT,
)  # fmt: skip
COMPLETION = Completion(
    author_name="Wrighty", author_email="wrighty@example.invalid",
    integration=Integration(kind="merge"),
)  # fmt: skip

# Each implementation, made for a project at its root with wrighty's folder in it.
Make = Callable[[Path, Path, Completion], WorkProduct]
IMPLEMENTATIONS: dict[str, Make] = {"git": GitWorkProduct}


@pytest.fixture(params=sorted(IMPLEMENTATIONS))
def make(request: pytest.FixtureRequest) -> Make:
    return IMPLEMENTATIONS[request.param]


@pytest.fixture
def project(git_project: Path) -> Path:
    return git_project  # tests/conftest.py's: a repository on main, wrighty's folder ignored


def work_product(make: Make, project: Path, completion: Completion = COMPLETION) -> WorkProduct:
    return make(project, project / ".wrighty", completion)


def prepared(product: WorkProduct, project: Path) -> tuple[Path, Session]:
    """The item's workspace for its first run, and the session that records it."""
    workspace = product.prepare("worktree", item=ITEM, session=None)
    session = Session(
        ITEM.id, "claude", "s-1", str(workspace.path), "here", workspace.branch,
        workspace.base_commit,
    )  # fmt: skip
    return workspace.path, session


def target(session: Session) -> IntegrationTarget:
    return IntegrationTarget(
        ITEM.id, ITEM.title, session.branch, session.base_commit, Path(session.workspace),
        f"Item {ITEM.id}: {ITEM.title}\n",
    )  # fmt: skip


def test_a_workspace_is_made_on_the_items_branch_from_the_projects_head(
    make: Make, project: Path
) -> None:
    product = work_product(make, project)
    path, session = prepared(product, project)
    assert path == project / ".wrighty" / "worktrees" / str(ITEM.id)
    assert session.branch == "wrighty/7-fix-the-login-page"
    assert session.base_commit == git(project, "rev-parse", "HEAD")
    assert git(path, "symbolic-ref", "--short", "HEAD") == session.branch


def test_the_next_run_keeps_the_workspace_and_what_is_in_it(make: Make, project: Path) -> None:
    product = work_product(make, project)
    path, session = prepared(product, project)
    (path / "half.txt").write_text("work in progress\n")
    again = product.prepare("worktree", item=ITEM, session=session, resume=True)
    assert (again.path, again.branch) == (path, session.branch)
    assert (path / "half.txt").read_text() == "work in progress\n"


def test_the_commit_takes_the_runs_change_once_and_its_stat_names_it(
    make: Make, project: Path
) -> None:
    product = work_product(make, project)
    path, session = prepared(product, project)
    assert session.base_commit is not None
    (path / "login.py").write_text("fixed\n")
    stat = product.change_stat(path, session.base_commit)
    assert stat is not None
    assert "login.py" in stat
    done = product.commit(path, item=ITEM, run_id="run-1", base_commit=session.base_commit)
    assert done.ending is Ending.COMMITTED
    assert done.commit == git(path, "rev-parse", f"refs/heads/{session.branch}")
    assert git(path, "log", "-1", "--format=%an %s") == "Wrighty Fix the login page"
    again = product.commit(path, item=ITEM, run_id="run-1", base_commit=session.base_commit)
    assert again.ending is Ending.NOTHING


def test_a_run_that_changed_nothing_is_said_to(make: Make, project: Path) -> None:
    product = work_product(make, project)
    path, session = prepared(product, project)
    done = product.commit(path, item=ITEM, run_id="run-1", base_commit=session.base_commit)
    assert done.ending is Ending.UNCHANGED


def test_the_branch_guard_brings_a_detached_head_back(make: Make, project: Path) -> None:
    product = work_product(make, project)
    path, session = prepared(product, project)
    assert session.branch is not None
    assert product.keep_on_branch(path, session.branch).off_branch is None
    git(path, "checkout", "-q", "--detach")
    (path / "early.txt").write_text("the agent's\n")
    git(path, "add", "early.txt")
    git(path, "commit", "-qm", "the agent's own commit")
    agents = git(path, "rev-parse", "HEAD")
    guarded = product.keep_on_branch(path, session.branch)
    assert (guarded.brought_back, guarded.off_branch) == (agents, None)
    assert git(path, "rev-parse", f"refs/heads/{session.branch}") == agents


def test_the_branch_guard_sets_another_branch_aside(make: Make, project: Path) -> None:
    product = work_product(make, project)
    path, session = prepared(product, project)
    assert session.branch is not None
    git(path, "checkout", "-q", "-b", "elsewhere")
    guarded = product.keep_on_branch(path, session.branch)
    assert guarded.brought_back is None
    assert guarded.off_branch is not None
    assert "elsewhere" in guarded.off_branch


def test_an_accepted_branch_is_merged_into_the_project(make: Make, project: Path) -> None:
    product = work_product(make, project)
    path, session = prepared(product, project)
    (path / "login.py").write_text("fixed\n")
    product.commit(path, item=ITEM, run_id="run-1", base_commit=session.base_commit)
    integrated = product.integrate(target(session))
    assert integrated.commit == git(project, "rev-parse", "HEAD")
    assert integrated.words is not None
    assert "fast-forward" in integrated.words
    assert (project / "login.py").read_text() == "fixed\n"


def test_a_merge_commit_when_the_project_moved_on(make: Make, project: Path) -> None:
    product = work_product(make, project)
    path, session = prepared(product, project)
    (path / "login.py").write_text("fixed\n")
    product.commit(path, item=ITEM, run_id="run-1", base_commit=session.base_commit)
    (project / "other.py").write_text("other\n")
    git(project, "add", "other.py")
    git(project, "commit", "-qm", "main moves on")
    integrated = product.integrate(target(session))
    assert integrated.words is not None
    assert "a merge commit" in integrated.words
    parents = git(project, "rev-list", "--parents", "--max-count=1", "HEAD").split()[1:]
    assert len(parents) == 2
    assert git(project, "log", "-1", "--format=%s") == f"Merge item {ITEM.id}: {ITEM.title}"


def test_a_refused_integration_leaves_the_project_as_it_was(make: Make, project: Path) -> None:
    product = work_product(make, project)
    path, session = prepared(product, project)
    (path / "login.py").write_text("fixed\n")
    product.commit(path, item=ITEM, run_id="run-1", base_commit=session.base_commit)
    (path / "forgotten.txt").write_text("not committed\n")
    before = git(project, "rev-parse", "HEAD")
    with pytest.raises(IntegrationError, match="uncommitted changes"):
        product.integrate(target(session))
    assert git(project, "rev-parse", "HEAD") == before
    assert not (project / "login.py").exists()


def test_conflicts_refuse_the_merge_and_name_the_files(make: Make, project: Path) -> None:
    product = work_product(make, project)
    path, session = prepared(product, project)
    (path / "README").write_text("the item's\n")
    product.commit(path, item=ITEM, run_id="run-1", base_commit=session.base_commit)
    (project / "README").write_text("the project's\n")
    git(project, "commit", "-qam", "main changes README")
    before = git(project, "rev-parse", "HEAD")
    with pytest.raises(IntegrationError, match="conflicts with main in 1 file README"):
        product.integrate(target(session))
    assert git(project, "rev-parse", "HEAD") == before
    assert git(project, "status", "--porcelain") == ""
