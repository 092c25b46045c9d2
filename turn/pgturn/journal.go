package pgturn

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/internal/codec"
)

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
	if e.CaseRef.ExpectedRevision, err = codec.Revision(r.rev, "expected revision"); err != nil {
		return e, err
	}
	if e.Status, err = codec.JournalStatus(r.status); err != nil {
		return e, err
	}
	e.CommandPayload, e.Origin = readDoc(r.payload), readDoc(r.origin)
	if r.result != nil {
		e.Result = new(turn.JournalOutcome)
		if err := codec.Unmarshal(r.result, e.Result, "journal outcome"); err != nil {
			return e, err
		}
	}
	e.CreatedAt, e.CompletedAt = e.CreatedAt.UTC(), utc(r.completed)
	return e, nil
}

func collectJournal(rows pgx.Rows, err error) ([]turn.JournalEntry, error) {
	return collect(rows, err, (*journalRow).dest, (*journalRow).entry)
}

func (s *Backend) loadCommand(ctx context.Context, q querier, account string, id turn.ID) (turn.JournalEntry, error) {
	var r journalRow
	if err := scanOne(q.QueryRow(ctx, s.st.LoadCommand, account, id), "command", id, r.dest()...); err != nil {
		return turn.JournalEntry{}, err
	}
	return r.entry()
}

func (s *Backend) commandsForTurn(ctx context.Context, q querier, account string, id turn.ID, pendingOnly bool) ([]turn.JournalEntry, error) {
	sql := s.st.CommandsForTurn
	if pendingOnly {
		sql = s.st.PendingForTurn
	}
	return collectJournal(q.Query(ctx, sql, account, id))
}

// admitStep admits e into *out. When a concurrent admission of the same key committed after this
// statement's snapshot was taken, the statement inserts nothing and cannot see the winner's row
// either: *raced is set, and the caller re-reads by key once the (empty) transaction is over.
func (s *Backend) admitStep(e turn.JournalEntry, out *turn.Admission, raced *bool) step {
	args := []any{e.AccountID, e.CommandID, e.IdempotencyKey, e.TurnID, e.CaseRef.Workflow, e.CaseRef.CaseID,
		int64(e.CaseRef.ExpectedRevision), e.CommandType, codec.Doc(e.CommandPayload), codec.Doc(e.Origin), string(e.Status), e.CreatedAt}
	return step{sql: s.st.BeginCommand, args: args, read: func(r results) error {
		err := scanAdmission(r.QueryRow(), out)
		if errors.Is(err, pgx.ErrNoRows) {
			*raced = true
			return nil
		}
		return err
	}}
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
func (s *Backend) readAdmission(ctx context.Context, q querier, e turn.JournalEntry) (turn.Admission, error) {
	var a turn.Admission
	err := scanAdmission(q.QueryRow(ctx, s.st.BeginCommandReread, e.AccountID, e.IdempotencyKey), &a)
	if errors.Is(err, pgx.ErrNoRows) {
		return a, codec.Corrupt("command key of %s was taken and then vanished", e.CommandID)
	}
	return a, err
}

// markExecutingStep starts the command; on an executing entry it is an accepted repeat.
func (s *Backend) markExecutingStep(account string, id turn.ID) step {
	return step{sql: s.st.MarkExecuting, args: []any{account, id}, read: func(r results) error {
		var moved bool
		var st *string
		if err := r.QueryRow().Scan(&moved, &st); err != nil {
			return classify(err)
		}
		switch {
		case moved:
			return nil
		case st == nil:
			return codec.NotFound("command", id)
		}
		status, err := codec.JournalStatus(*st)
		if err != nil {
			return err
		}
		if status == turn.JournalExecuting {
			return nil
		}
		return codec.Conflict("command %s is %q and cannot start executing", id, status)
	}}
}

// completeStep records the outcome. Recording the same outcome again is an accepted repeat.
func (s *Backend) completeStep(what, account string, id turn.ID, o turn.JournalOutcome, at time.Time) (step, error) {
	target := o.Status()
	result, err := codec.Marshal(o)
	if err != nil {
		return step{}, err
	}
	sources := target.Sources()
	labels := make([]string, len(sources))
	for i, st := range sources {
		labels[i] = string(st)
	}
	return step{what: what, sql: s.st.CompleteCommand, args: []any{account, id, string(target), result, at, labels},
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
			status, err := codec.JournalStatus(st)
			if err != nil {
				return err
			}
			if status == target && prior != nil {
				var p turn.JournalOutcome
				if err := codec.Unmarshal(prior, &p, "journal outcome"); err != nil {
					return err
				}
				if p.Equal(o) {
					return nil // the same outcome, recorded again: a retry
				}
			}
			return codec.Conflict("command %s is %q and cannot record %q", id, status, o.Kind)
		}}, nil
}
