package pgturn

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/steadhq/stead/turn"
)

const eventColumns = `sequence, event_id, account_id, workflow_key, case_id, case_revision, command_id,
    event_type, payload, occurred_at, redacted_at, redaction_authority`

type eventRow struct {
	e          turn.Event
	rev        int64
	payload    []byte
	redactedAt *time.Time
	authority  *string
}

func (r *eventRow) dest() []any {
	e := &r.e
	return []any{&e.Sequence, &e.EventID, &e.AccountID, &e.CaseKey.Workflow, &e.CaseKey.CaseID, &r.rev,
		&e.CommandID, &e.EventType, &r.payload, &e.OccurredAt, &r.redactedAt, &r.authority}
}

func (r *eventRow) event() (turn.Event, error) {
	e := r.e
	var err error
	if e.CaseRevision, err = readRevision(r.rev, "case revision"); err != nil {
		return e, err
	}
	if e.Sequence <= 0 {
		return e, corrupt("event %s has sequence %d", e.EventID, e.Sequence)
	}
	e.Payload, e.OccurredAt = readDoc(r.payload), e.OccurredAt.UTC()
	if e.Redaction, err = redaction(r.redactedAt, r.authority); err != nil {
		return e, err
	}
	return e, nil
}

// redaction reads the two audit columns, which a CHECK keeps both set or both NULL.
func redaction(at *time.Time, authority *string) (*turn.Redaction, error) {
	switch {
	case at == nil && authority == nil:
		return nil, nil
	case at == nil || authority == nil:
		return nil, corrupt("half a redaction record")
	}
	return &turn.Redaction{RedactedAt: at.UTC(), Authority: *authority}, nil
}

func collectEvents(rows pgx.Rows, err error) ([]turn.Event, error) {
	return collect(rows, err, (*eventRow).dest, (*eventRow).event)
}

// A cursor is only safe if an account's events become visible in sequence order: were two
// transactions of one account to draw sequences 10 and 11 and commit 11 first, a reader could
// page past 11 and never see 10. So every append first takes a lock of its account, held until
// its transaction ends: the next append of the account draws its sequences only once the
// previous one is visible (PostgreSQL releases transaction locks after making the commit
// visible). Appends of different accounts do not wait for each other (but for hash collisions,
// which only cost a wait). The lock is taken before anything else the transaction writes, so it
// never waits while holding a row another append needs.
const sqlAppendLock = `SELECT pg_advisory_xact_lock(` + appendLockClass + `, hashtext($1))`

// appendLockClass is the first key of the append locks: "turn" in ASCII, apart from the key
// migrations lock with.
const appendLockClass = "1953854062"

// appendLockStep serialises the appends of account in this store's schema.
func (s *Store) appendLockStep(account string) step {
	return execStep("", s.sql(sqlAppendLock), []any{s.schema + "/" + account}, nil)
}

// The batch is one INSERT whose rows are produced in batch order (ORDER BY the ordinality), so
// the identity column hands out sequences in that order. A duplicate id, against a stored event
// or within the batch, violates the primary key and fails the statement whole.
const sqlAppendEvents = `
INSERT INTO {schema}turn_events (account_id, event_id, workflow_key, case_id, case_revision,
    command_id, event_type, payload, occurred_at)
SELECT $1, e.event_id, $2, $3, $4, $5, e.event_type, e.payload, e.occurred_at
FROM unnest($6::uuid[], $7::text[], $8::jsonb[], $9::timestamptz[])
    WITH ORDINALITY AS e(event_id, event_type, payload, occurred_at, position)
ORDER BY e.position`

// appendStep appends the batch; its ids, in batch order, go to *ids.
func (s *Store) appendStep(what string, b turn.EventBatch, ids *[]turn.ID) (step, error) {
	if len(b.Events) == 0 {
		return step{}, turn.InvalidRecord("event batch is empty")
	}
	rev, err := revision(b.Revision, "revision")
	if err != nil {
		return step{}, err
	}
	batchIDs := make([]turn.ID, len(b.Events))
	texts := make([]string, len(b.Events))
	types := make([]string, len(b.Events))
	payloads := make([]string, len(b.Events))
	occurred := make([]time.Time, len(b.Events))
	for i, e := range b.Events {
		batchIDs[i], texts[i], types[i], payloads[i], occurred[i] = e.EventID, e.EventID.String(), e.EventType, doc(e.Payload), turn.ClockTime(e.OccurredAt)
	}
	args := []any{b.AccountID, b.CaseKey.Workflow, b.CaseKey.CaseID, rev, b.CommandID, texts, types, payloads, occurred}
	return execStep(what, s.sql(sqlAppendEvents), args, func(pgconn.CommandTag) error {
		if ids != nil {
			*ids = batchIDs
		}
		return nil
	}), nil
}

const sqlListSince = `
SELECT ` + eventColumns + ` FROM {schema}turn_events
WHERE account_id = $1 AND workflow_key = $2 AND case_id = $3 AND case_revision > $4
ORDER BY sequence
LIMIT $5`

func (s *Store) listSince(ctx context.Context, q querier, account string, key turn.CaseKey, since turn.Revision, limit int) ([]turn.Event, error) {
	return collectEvents(q.Query(ctx, s.sql(sqlListSince), account, key.Workflow, key.CaseID, int64(since), clampLimit(limit)))
}

// The account is filtered in SQL, on the (account_id, sequence) index, so other tenants' events
// neither consume the limit nor cost a read.
const sqlReadFrom = `
SELECT ` + eventColumns + ` FROM {schema}turn_events
WHERE account_id = $1 AND sequence > $2
ORDER BY sequence
LIMIT $3`

func (s *Store) readFrom(ctx context.Context, q querier, account string, after turn.Cursor, limit int) (turn.EventPage, error) {
	page := turn.EventPage{Events: []turn.Event{}, Next: after}
	if limit == 0 {
		return page, nil
	}
	events, err := collectEvents(q.Query(ctx, s.sql(sqlReadFrom), account, int64(after), clampLimit(limit)))
	if err != nil {
		return page, err
	}
	page.Events = events
	if n := len(events); n > 0 {
		page.Next = turn.After(events[n-1].Sequence)
	}
	return page, nil
}

const sqlLoadEvents = `
SELECT ` + eventColumns + ` FROM {schema}turn_events WHERE account_id = $1 AND event_id = ANY($2::uuid[])`

// loadEvents returns the account's events among ids, in the requested order (a repeated id
// repeated); the database returns them in no particular order.
func (s *Store) loadEvents(ctx context.Context, q querier, account string, ids []turn.ID) ([]turn.Event, error) {
	if len(ids) == 0 {
		return []turn.Event{}, nil
	}
	found, err := collectEvents(q.Query(ctx, s.sql(sqlLoadEvents), account, idTexts(ids)))
	if err != nil {
		return nil, err
	}
	byID := make(map[turn.ID]int, len(found))
	for i, e := range found {
		byID[e.EventID] = i
	}
	out := make([]turn.Event, 0, len(found))
	for _, id := range ids {
		if i, ok := byID[id]; ok {
			out = append(out, found[i])
		}
	}
	return out, nil
}

const sqlCountEvents = `
SELECT count(*) FROM {schema}turn_events WHERE account_id = $1 AND workflow_key = $2 AND case_id = $3`

func (s *Store) countEvents(ctx context.Context, q querier, account string, key turn.CaseKey) (int64, error) {
	var n int64
	err := q.QueryRow(ctx, s.sql(sqlCountEvents), account, key.Workflow, key.CaseID).Scan(&n)
	return n, classify(err)
}

// Erasure is this one UPDATE. It writes the payload and the two audit columns and nothing else,
// so no erasure can move or drop an event. COALESCE keeps the first record: who erased what is
// not something a retry may rewrite; under two concurrent requests the row lock orders them and
// the second returns the first one's record. The WHERE clause is account-scoped, so another
// tenant's id updates nothing and is NotFound.
const sqlRedactPayload = `
UPDATE {schema}turn_events
SET payload = 'null'::jsonb,
    redacted_at = COALESCE(redacted_at, $4),
    redaction_authority = COALESCE(redaction_authority, $3)
WHERE account_id = $1 AND event_id = $2
RETURNING redacted_at, redaction_authority`

func (s *Store) redactStep(account string, id turn.ID, authority string, at time.Time, out *turn.Redaction) step {
	return step{sql: s.sql(sqlRedactPayload), args: []any{account, id, authority, at}, read: func(r results) error {
		var redactedAt *time.Time
		var by *string
		if err := scanOne(r.QueryRow(), "event", id, &redactedAt, &by); err != nil {
			return err
		}
		red, err := redaction(redactedAt, by)
		if err != nil {
			return err
		}
		if red == nil {
			return corrupt("event %s was redacted without a record", id)
		}
		*out = *red
		return nil
	}}
}
