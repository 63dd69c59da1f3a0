-- 0010: `wrighty import FILE.md`: an imported item keeps its section's key (the file's
-- name and the section's key) and a fingerprint of what the section said, so that importing
-- the file again creates nothing twice and reports a changed section.

ALTER TABLE items ADD COLUMN import_key TEXT;
ALTER TABLE items ADD COLUMN import_fingerprint TEXT;
CREATE UNIQUE INDEX items_by_import_key ON items (import_key) WHERE import_key IS NOT NULL;
