-- 0007: the usage ledger and budgets. Each run records the agent that ran and what
-- its vendor reported, as it was read: tokens by kind, the cost (the vendor's own, or an
-- estimate from wrighty.json's pricing), the models, turns and API time; usage is null until
-- anything is reported, 'partial' while the run goes on (or when it died), 'final' once the
-- vendor's end-of-run figures were read. An item may carry a budget of its own.

ALTER TABLE runs ADD COLUMN agent TEXT;
ALTER TABLE runs ADD COLUMN usage TEXT CHECK (usage IN ('partial', 'final'));
ALTER TABLE runs ADD COLUMN input_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN output_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN cache_read_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN cache_write_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN cost_usd REAL;
ALTER TABLE runs ADD COLUMN cost_source TEXT CHECK (cost_source IN ('reported', 'estimated'));
ALTER TABLE runs ADD COLUMN models TEXT NOT NULL DEFAULT '[]';
ALTER TABLE runs ADD COLUMN turns INTEGER;
ALTER TABLE runs ADD COLUMN api_ms INTEGER;
CREATE INDEX runs_by_agent ON runs (agent, started_at);

ALTER TABLE items ADD COLUMN max_cost_usd REAL;
ALTER TABLE items ADD COLUMN max_tokens INTEGER;
