-- 0005: retries after a usage limit or a provider outage (worker.usageFailure) count on a
-- counter of their own, beside crash retries and the reaper's requeues.

ALTER TABLE items ADD COLUMN usage_retries INTEGER NOT NULL DEFAULT 0;
