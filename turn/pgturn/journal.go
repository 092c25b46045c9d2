package pgturn

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead/turn"
)

const journalColumns = `command_id, account_id, idempotency_key, turn_id, workflow_key, case_id,
    expected_revision, command_type, command_payload, origin, status, result, created_at, completed_at`

type journalRow struct {
	e         turn.JournalEntry
	rev       int64
	payload   []byte
	origin    []byte
	status    string
	result    []byte
	completed *time.Time
}

func (r *journalRow) dest() []any {
	e := &r.e
	return []any{&e.CommandID, &e.AccountID, &e.IdempotencyKey, &e.TurnID, &e.CaseRef.Workflow,
		&e.CaseRef.CaseID, &r.rev, &e.CommandType, &r.payload, &r.origin, &r.status, &r.result,
		&e.CreatedAt, &r.completed}
}

func (r *journalRow) entry() (turn.JournalEntry, error) {
	e := r.e
	var err error
	if e.CaseRef.ExpectedRevision, err = readRevision(r.rev, "expected revision"); err != nil {
		return e, err
	}
	if e.Status, err = journalStatus(r.status); err != nil {
		return e, err
	}
	e.CommandPayload, e.Origin = readDoc(r.payload), readDoc(r.origin)
	if r.result != nil {
		e.Result = new(turn.JournalOutcome)
		if err := unmarshal(r.result, e.Result, "journal outcome"); err != nil {
			return e, err
		}
	}
	e.CreatedAt, e.CompletedAt = e.CreatedAt.UTC(), utc(r.completed)
	return e, nil
}

func collectJournal(rows pgx.Rows, err error) ([]turn.JournalEntry, error) {
	return collect(rows, err, (*journalRow).dest, (*journalRow).entry)
}

const sqlLoadCommand = `
SELECT ` + journalColumns + ` FROM {schema}turn_journal WHERE account_id = $1 AND command_id = $2`

func (s *Store) loadCommand(ctx context.Context, q querier, account string, id turn.ID) (turn.JournalEntry, error) {
	var r journalRow
	if err := scanOne(q.QueryRow(ctx, s.sql(sqlLoadCommand), account, id), "command", id, r.dest()...); err != nil {
		return turn.JournalEntry{}, err
	}
	return r.entry()
}

const sqlCommandsForTurn = `
SELECT ` + journalColumns + ` FROM {schema}turn_journal
WHERE account_id = $1 AND turn_id = $2
ORDER BY created_at, command_id`

const sqlPendingForTurn = `
SELECT ` + journalColumns + ` FROM {schema}turn_journal
WHERE account_id = $1 AND turn_id = $2 AND status IN ('pending', 'executing')
ORDER BY created_at, command_id`

func (s *Store) commandsForTurn(ctx context.Context, q querier, account string, id turn.ID, pendingOnly bool) ([]turn.JournalEntry, error) {
	sql := sqlCommandsForTurn
	if pendingOnly {
		sql = sqlPendingForTurn
	}
	return collectJournal(q.Query(ctx, s.sql(sql), account, id))
}

// Admission is one statement in the common cases. A new key inserts and returns the row (fresh);
// a known key inserts nothing (ON CONFLICT on the key's constraint, so a command id clash under
// another key still fails as a unique violation) and the second branch returns the stored row.
// A concurrent caller's insert of the same key makes this one wait for it and then do nothing;
// the second branch cannot see that row (it reads the statement's snapshot, taken before the
// wait), so an empty result is followed by a re-read.
const sqlBeginCommand = `
WITH fresh AS (
    INSERT INTO {schema}turn_journal (account_id, command_id, idempotency_key, turn_id, workflow_key,
        case_id, expected_revision, command_type, command_payload, origin, status, created_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
    ON CONFLICT ON CONSTRAINT turn_journal_idempotency_key DO NOTHING
    RETURNING ` + journalColumns + `)
SELECT true, * FROM fresh
UNION ALL
SELECT false, ` + journalColumns + ` FROM {schema}turn_journal
WHERE account_id = $1 AND idempotency_key = $3 AND NOT EXISTS (SELECT 1 FROM fresh)`

const sqlCommandByKey = `
SELECT false, ` + journalColumns + ` FROM {schema}turn_journal WHERE account_id = $1 AND idempotency_key = $2`

// admitStep admits e into *out. When a concurrent admission of the same key committed after this
// statement's snapshot was taken, the statement inserts nothing and cannot see the winner's row
// either: *raced is set, and the caller re-reads by key once the (empty) transaction is over.
func (s *Store) admitStep(e turn.JournalEntry, out *turn.Admission, raced *bool) (step, error) {
	if e.Status != turn.JournalPending && e.Status != turn.JournalAwaitingConfirmation {
		return step{}, turn.InvalidRecord("command %s admitted as %q, not pending or awaiting_confirmation", e.CommandID, e.Status)
	}
	if e.Result != nil || !e.CompletedAt.IsZero() {
		return step{}, turn.InvalidRecord("command %s admitted with an outcome already recorded", e.CommandID)
	}
	rev, err := revision(e.CaseRef.ExpectedRevision, "expected revision")
	if err != nil {
		return step{}, err
	}
	args := []any{e.AccountID, e.CommandID, e.IdempotencyKey, e.TurnID, e.CaseRef.Workflow, e.CaseRef.CaseID,
		rev, e.CommandType, doc(e.CommandPayload), doc(e.Origin), string(e.Status), turn.ClockTime(e.CreatedAt)}
	return step{sql: s.sql(sqlBeginCommand), args: args, read: func(r results) error {
		err := scanAdmission(r.QueryRow(), out)
		if errors.Is(err, pgx.ErrNoRows) {
			*raced = true
			return nil
		}
		return err
	}}, nil
}

// scanAdmission reads (fresh, entry columns) into out; pgx.ErrNoRows is returned as is.
func scanAdmission(row pgx.Row, out *turn.Admission) error {
	var fresh bool
	var r journalRow
	err := row.Scan(append([]any{&fresh}, r.dest()...)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	if err != nil {
		return classify(err)
	}
	entry, err := r.entry()
	if err != nil {
		return err
	}
	*out = turn.Admission{Fresh: fresh, Entry: entry}
	return nil
}

// readAdmission re-reads the entry that holds the key after a raced admission.
func (s *Store) readAdmission(ctx context.Context, q querier, e turn.JournalEntry) (turn.Admission, error) {
	var a turn.Admission
	err := scanAdmission(q.QueryRow(ctx, s.sql(sqlCommandByKey), e.AccountID, e.IdempotencyKey), &a)
	if errors.Is(err, pgx.ErrNoRows) {
		return a, corrupt("command key of %s was taken and then vanished", e.CommandID)
	}
	return a, err
}

// A pending or awaiting entry starts executing; the statement also returns the status the entry
// had (NULL for none), for the rule when it did not move.
const sqlMarkExecuting = `
WITH moved AS (
    UPDATE {schema}turn_journal SET status = 'executing'
    WHERE account_id = $1 AND command_id = $2 AND status IN ('pending', 'awaiting_confirmation')
    RETURNING 1)
SELECT EXISTS (SELECT 1 FROM moved),
    (SELECT status FROM {schema}turn_journal WHERE account_id = $1 AND command_id = $2)`

// markExecutingStep starts the command; on an executing entry it is an accepted repeat.
func (s *Store) markExecutingStep(account string, id turn.ID) step {
	return step{sql: s.sql(sqlMarkExecuting), args: []any{account, id}, read: func(r results) error {
		var moved bool
		var st *string
		if err := r.QueryRow().Scan(&moved, &st); err != nil {
			return classify(err)
		}
		switch {
		case moved:
			return nil
		case st == nil:
			return notFound("command", id)
		}
		status, err := journalStatus(*st)
		if err != nil {
			return err
		}
		if status == turn.JournalExecuting {
			return nil
		}
		return conflict("command %s is %q and cannot start executing", id, status)
	}}
}

// The journal's transition table is in the WHERE clause: the entry moves only from a status that
// may reach the outcome's. When it does not move, the second branch returns the entry as it stood
// (the statement's snapshot), which is all the rule needs to tell a repeat from a conflict.
const sqlCompleteCommand = `
WITH moved AS (
    UPDATE {schema}turn_journal SET status = $3, result = $4, completed_at = $5
    WHERE account_id = $1 AND command_id = $2 AND status = ANY($6::text[])
    RETURNING status, result)
SELECT true, status, result FROM moved
UNION ALL
SELECT false, status, result FROM {schema}turn_journal
WHERE account_id = $1 AND command_id = $2 AND NOT EXISTS (SELECT 1 FROM moved)`

// completeStep records the outcome. Recording the same outcome again is an accepted repeat.
func (s *Store) completeStep(what, account string, id turn.ID, o turn.JournalOutcome, at time.Time) (step, error) {
	target := o.Status()
	if target == "" {
		return step{}, turn.InvalidRecord("unknown outcome kind %q", o.Kind)
	}
	result, err := marshal(o)
	if err != nil {
		return step{}, err
	}
	sources := target.Sources()
	labels := make([]string, len(sources))
	for i, st := range sources {
		labels[i] = string(st)
	}
	return step{what: what, sql: s.sql(sqlCompleteCommand), args: []any{account, id, string(target), result, at, labels},
		read: func(r results) error {
			var moved bool
			var st string
			var prior []byte
			if err := scanOne(r.QueryRow(), "command", id, &moved, &st, &prior); err != nil {
				return err
			}
			if moved {
				return nil
			}
			status, err := journalStatus(st)
			if err != nil {
				return err
			}
			if status == target && prior != nil {
				var p turn.JournalOutcome
				if err := unmarshal(prior, &p, "journal outcome"); err != nil {
					return err
				}
				if p.Equal(o) {
					return nil // the same outcome, recorded again: a retry
				}
			}
			return conflict("command %s is %q and cannot record %q", id, status, o.Kind)
		}}, nil
}
