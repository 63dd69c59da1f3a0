-- Checks that fail on the base (docs/verify.md#checks-that-fail-on-the-base): a check's evidence
-- says whether it failed as it fails on the item's base too (then it is not the agent's
-- failure), and each check's result on a base commit is kept, run once per commit and command.

ALTER TABLE checks ADD COLUMN fails_on_base BOOLEAN NOT NULL DEFAULT FALSE;

CREATE TABLE base_checks (
    base_commit TEXT    NOT NULL,
    check_name  TEXT    NOT NULL,
    check_key   TEXT    NOT NULL,
    failed      BOOLEAN NOT NULL,
    ending      TEXT    NOT NULL,
    output_tail TEXT    NOT NULL DEFAULT '',
    checked_at  TEXT    NOT NULL,
    PRIMARY KEY (base_commit, check_name, check_key)
);
