-- 0003: what an agent reports from inside its run (`wrighty finish` / `wrighty fail`), fenced
-- by a per-run claim token.

ALTER TABLE runs ADD COLUMN claim_token TEXT;
ALTER TABLE runs ADD COLUMN agent_report TEXT;
ALTER TABLE runs ADD COLUMN agent_reason TEXT;
