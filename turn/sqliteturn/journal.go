package sqliteturn

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/internal/codec"
)

type journalRow struct {
	e                  turn.JournalEntry
	rev                int64
	payload, origin    string
	status             string
	result             sql.NullString
	created, completed sql.NullInt64
}

func (r *journalRow) dest() []any {
	e := &r.e
	return []any{&e.CommandID, &e.AccountID, &e.IdempotencyKey, &e.TurnID, &e.CaseRef.Workflow,
		&e.CaseRef.CaseID, &r.rev, &e.CommandType, &r.payload, &r.origin, &r.status, &r.result,
		&r.created, &r.completed}
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
	e.CommandPayload, e.Origin = readDoc(sql.NullString{String: r.payload, Valid: true}), readDoc(sql.NullString{String: r.origin, Valid: true})
	if r.result.Valid {
		e.Result = new(turn.JournalOutcome)
		if err := codec.Unmarshal(r.result.String, e.Result, "journal outcome"); err != nil {
			return e, err
		}
	}
	e.CreatedAt, e.CompletedAt = fromMicros(r.created), fromMicros(r.completed)
	return e, nil
}

func collectJournal(rows *sql.Rows, err error) ([]turn.JournalEntry, error) {
	return collect(rows, err, (*journalRow).dest, (*journalRow).entry)
}

// LoadCommand implements turn.JournalReader.
func (s *Backend) LoadCommand(ctx context.Context, account string, id turn.ID) (turn.JournalEntry, error) {
	return readOne(ctx, s, func(st *statements) (turn.JournalEntry, error) {
		var r journalRow
		if err := scanOne(st.LoadCommand.QueryRowContext(ctx, account, id), "command", id, r.dest()...); err != nil {
			return turn.JournalEntry{}, err
		}
		return r.entry()
	})
}

// CommandsForTurn implements turn.JournalReader.
func (s *Backend) CommandsForTurn(ctx context.Context, account string, id turn.ID) ([]turn.JournalEntry, error) {
	return readOne(ctx, s, func(st *statements) ([]turn.JournalEntry, error) {
		return collectJournal(st.CommandsForTurn.QueryContext(ctx, account, id))
	})
}

// PendingForTurn implements turn.JournalReader.
func (s *Backend) PendingForTurn(ctx context.Context, account string, id turn.ID) ([]turn.JournalEntry, error) {
	return readOne(ctx, s, func(st *statements) ([]turn.JournalEntry, error) {
		return collectJournal(st.PendingForTurn.QueryContext(ctx, account, id))
	})
}

// BeginCommand implements turn.JournalWriter. The key is read and, when free, taken in one write
// transaction, which holds the file's write lock: no admission of any process can take the key
// in between, so there is exactly one Fresh per key.
func (s *Backend) BeginCommand(ctx context.Context, e turn.JournalEntry) (turn.Admission, error) {
	return writeOne(ctx, s, func(st *statements) (turn.Admission, error) {
		var r journalRow
		err := st.BeginCommand.QueryRowContext(bg, e.AccountID, e.IdempotencyKey).Scan(r.dest()...)
		if err == nil {
			stored, err := r.entry()
			return turn.Admission{Entry: stored}, err
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return turn.Admission{}, classify(err)
		}
		_, err = st.BeginCommandInsert.ExecContext(bg, e.AccountID, e.CommandID, e.IdempotencyKey, e.TurnID,
			e.CaseRef.Workflow, e.CaseRef.CaseID, int64(e.CaseRef.ExpectedRevision), e.CommandType,
			codec.Doc(e.CommandPayload), codec.Doc(e.Origin), string(e.Status), micros(e.CreatedAt))
		if err != nil {
			return turn.Admission{}, classify(err)
		}
		return turn.Admission{Fresh: true, Entry: e}, nil
	})
}

// MarkExecuting implements turn.JournalWriter; on an executing entry it is an accepted repeat.
func (s *Backend) MarkExecuting(ctx context.Context, account string, id turn.ID) error {
	return s.write(ctx, func(st *statements) error {
		n, err := affected(st.MarkExecuting.ExecContext(bg, account, id))
		if err != nil || n == 1 {
			return err
		}
		var stored string
		if err := scanOne(st.MarkExecutingStatus.QueryRowContext(bg, account, id), "command", id, &stored); err != nil {
			return err
		}
		status, err := codec.JournalStatus(stored)
		if err != nil {
			return err
		}
		if status == turn.JournalExecuting {
			return nil
		}
		return codec.Conflict("command %s is %q and cannot start executing", id, status)
	})
}

// CompleteCommand implements turn.JournalWriter.
func (s *Backend) CompleteCommand(ctx context.Context, account string, id turn.ID, outcome turn.JournalOutcome) error {
	at := s.now()
	return s.write(ctx, func(st *statements) error { return s.complete(st, account, id, outcome, at) })
}

// complete records the outcome. Recording the same outcome again is an accepted repeat.
func (s *Backend) complete(st *statements, account string, id turn.ID, o turn.JournalOutcome, at time.Time) error {
	target := o.Status()
	result, err := codec.Marshal(o)
	if err != nil {
		return err
	}
	sources, err := codec.Marshal(target.Sources())
	if err != nil {
		return err
	}
	n, err := affected(st.CompleteCommand.ExecContext(bg, account, id, string(target), result, micros(at), sources))
	if err != nil || n == 1 {
		return err
	}
	var stored string
	var prior sql.NullString
	if err := scanOne(st.CompleteCommandStored.QueryRowContext(bg, account, id), "command", id, &stored, &prior); err != nil {
		return err
	}
	status, err := codec.JournalStatus(stored)
	if err != nil {
		return err
	}
	if status == target && prior.Valid {
		var p turn.JournalOutcome
		if err := codec.Unmarshal(prior.String, &p, "journal outcome"); err != nil {
			return err
		}
		if p.Equal(o) {
			return nil // the same outcome, recorded again: a retry
		}
	}
	return codec.Conflict("command %s is %q and cannot record %q", id, status, o.Kind)
}
