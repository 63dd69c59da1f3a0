-- 0015: `status` counts verification's figures (the checks by result, the fix turns) from two
-- indexes instead of every check and every run: checks by how they ended, and the fix turns.

CREATE INDEX checks_by_result ON checks (start_failure, exit_code);
CREATE INDEX runs_fix_turns ON runs (item_id) WHERE kind = 'fix';
