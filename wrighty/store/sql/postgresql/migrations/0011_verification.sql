-- Verification (docs/verify.md). Each item counts its fix turns and may name the checks it
-- runs (null: the checks wrighty.json gives its agent; else a JSON array of check names, []
-- for none). A run may be a fix turn (kind 'fix'). The checks table keeps each check's
-- evidence, insert-only: seq is the order of insertion, which orders an item's verifications.

ALTER TABLE items ADD COLUMN fix_turns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE items ADD COLUMN verify_checks TEXT;

ALTER TABLE runs DROP CONSTRAINT runs_kind_check;
ALTER TABLE runs ADD CONSTRAINT runs_kind_check CHECK (kind IN ('fresh', 'resume', 'fix'));

CREATE TABLE checks (
    verification_id  TEXT    NOT NULL,
    position         INTEGER NOT NULL CHECK (position >= 0),
    seq              BIGINT  GENERATED ALWAYS AS IDENTITY UNIQUE,
    item_id          BIGINT  NOT NULL REFERENCES items (id),
    run_id           TEXT    REFERENCES runs (run_id),
    generation       BIGINT  NOT NULL,
    actor            TEXT    NOT NULL,
    started_at       TEXT    NOT NULL,
    name             TEXT    NOT NULL,
    argv             TEXT    NOT NULL,
    exit_code        INTEGER,
    signal           INTEGER,
    timed_out        BOOLEAN NOT NULL DEFAULT FALSE,
    start_failure    TEXT,
    duration_seconds DOUBLE PRECISION NOT NULL,
    output_tail      TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (verification_id, position)
);

CREATE INDEX checks_by_item ON checks (item_id, seq);

CREATE FUNCTION wrighty_refuse_evidence_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'wrighty: check evidence is never rewritten';
END;
$$;

CREATE TRIGGER checks_insert_only BEFORE UPDATE OR DELETE ON checks
FOR EACH ROW EXECUTE FUNCTION wrighty_refuse_evidence_change();
