-- The reset an agent reported with its usage limit, from inside its run
-- (`wrighty fail --usage-limit --resets-at TIME`, docs/usage-limits.md).

ALTER TABLE runs ADD COLUMN agent_resets_at TEXT;
