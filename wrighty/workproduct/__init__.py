"""The git work product in one place (docs/work-product.md): git as wrighty runs it
(runner.py), the small reads of a repository (reads.py), an item's workspace and worktree
(worktree.py), the branch guard (branch.py), the commit after a done run (commit.py), the
change against its base (diff.py), the worktrees as `wrighty workspaces` lists and removes
them (listing.py), the integration of an accepted item's branch (integrate.py), and the port
a worker and the services ask (port.py). The decisions are the domain's (domain/work_product.py,
domain/integration.py, domain/workspaces.py).

Nothing is imported here.
"""
