-- Review (docs/work-product.md#since-your-last-review): the commit of the item's branch a
-- person rejected, so that its page shows first what changed since they last looked.

ALTER TABLE items ADD COLUMN reviewed_commit TEXT;
