-- 0014: the state review (docs/states.md): a verified success waiting for a person.

ALTER TABLE items DROP CONSTRAINT items_state_check;
ALTER TABLE items ADD CONSTRAINT items_state_check CHECK (state IN ('todo', 'queued', 'running',
    'retry-scheduled', 'needs-attention', 'review', 'done', 'cancelled'));
