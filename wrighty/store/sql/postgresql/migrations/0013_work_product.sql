-- 0013: the work product (docs/work-product.md): a worktree item's branch and the commit it was
-- made from, recorded with its session.

ALTER TABLE sessions ADD COLUMN branch TEXT;
ALTER TABLE sessions ADD COLUMN base_commit TEXT;
