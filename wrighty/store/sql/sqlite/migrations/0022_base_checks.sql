-- Checks that fail on the base (docs/verify.md#checks-that-fail-on-the-base): a check's evidence
-- says whether it failed as it fails on the item's base too (then it is not the agent's
-- failure), and each check's result on a base commit is kept, run once per commit and command.

ALTER TABLE checks ADD COLUMN fails_on_base INTEGER NOT NULL DEFAULT 0
    CHECK (fails_on_base IN (0, 1));

CREATE TABLE base_checks (
    base_commit TEXT    NOT NULL,
    check_name  TEXT    NOT NULL,
    check_key   TEXT    NOT NULL,
    failed      INTEGER NOT NULL CHECK (failed IN (0, 1)),
    ending      TEXT    NOT NULL,
    output_tail TEXT    NOT NULL DEFAULT '',
    checked_at  TEXT    NOT NULL,
    PRIMARY KEY (base_commit, check_name, check_key)
) STRICT;
