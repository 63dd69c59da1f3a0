-- What each worker waits for while it goes on (docs/scale.md#what-a-worker-waits-for): its
-- wake-up line refused (it polls meanwhile), or the store's calls failing (no connection). Null
-- while it waits for nothing; rows of an older wrighty have none.

ALTER TABLE workers ADD COLUMN waiting_for TEXT;
