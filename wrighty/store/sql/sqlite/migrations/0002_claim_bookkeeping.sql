-- 0002: claim bookkeeping: when a claim was taken and how far renewals may carry its lease.

ALTER TABLE items ADD COLUMN claimed_at TEXT;
ALTER TABLE items ADD COLUMN renew_deadline TEXT;

CREATE INDEX runs_by_claim ON runs (item_id, generation);
