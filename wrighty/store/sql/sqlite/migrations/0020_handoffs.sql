-- Handoffs (docs/handoff.md): how many times the item was handed to another agent, and the
-- person's note of the latest, which the next run's handoff prompt carries.

ALTER TABLE items ADD COLUMN handoffs INTEGER NOT NULL DEFAULT 0;
ALTER TABLE items ADD COLUMN handoff_note TEXT;
