-- Version 2: the audit trail of an erased event payload lives on the event row itself, so the one
-- UPDATE that erases a payload also records when and on whose authority. Both columns are
-- nullable, so code that predates them keeps working against this schema.
ALTER TABLE {schema}turn_events
    ADD COLUMN IF NOT EXISTS redacted_at         timestamptz,
    ADD COLUMN IF NOT EXISTS redaction_authority text;

-- A redaction is recorded whole or not at all. ADD CONSTRAINT has no IF NOT EXISTS form, so a
-- re-run swallows its own duplicate.
DO $$
BEGIN
    ALTER TABLE {schema}turn_events
        ADD CONSTRAINT turn_events_redaction_complete
        CHECK ((redacted_at IS NULL) = (redaction_authority IS NULL));
EXCEPTION WHEN duplicate_object THEN
    NULL;
END
$$;
