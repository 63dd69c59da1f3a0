-- 0009: each worker records the agent it runs, so that `status` can say which agents' items
-- wait with no live worker to run them. A row written before (or by an older wrighty) has
-- none: its agent is unknown.

ALTER TABLE workers ADD COLUMN agent TEXT;
