-- Each worker records how far its own clock is from the store's (PostgreSQL: the database's
-- clock is the fleet's; null on SQLite, whose workers share one machine's clock), and why it
-- stopped claiming when its own machine cannot run items (null while it claims). Rows of an
-- older wrighty have neither.

ALTER TABLE workers ADD COLUMN clock_offset_seconds REAL;
ALTER TABLE workers ADD COLUMN held_reason TEXT;
