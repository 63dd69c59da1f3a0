-- The morning view (`wrighty list --since`, the console's "Since you last looked", the
-- notify.digest notice) reads the items that moved since a time through an index of the items
-- by their latest event instead of every item.

CREATE INDEX items_by_update ON items (updated_at);
