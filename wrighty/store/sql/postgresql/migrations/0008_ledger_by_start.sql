-- 0008: the usage ledger read by start time (`status`, `wrighty inbox`, `wrighty usage --since`)
-- walks an index of runs by their start instead of every run.

CREATE INDEX runs_by_start ON runs (started_at);
