package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/internal/check"
)

// step is one commit made ready before its transaction: validated and encoded, so that the write
// lock is held only for the statements themselves.
type step struct {
	exe    *stead.Execution
	next   int64  // the version the commit stores
	data   []byte // exe encoded at version next
	events [][]byte
	trace  []byte // nil when the bundle has no trace step
	b      *stead.Bundle
}

// plan validates exe and b and encodes what the commit writes. Nothing of exe is changed.
func plan(exe *stead.Execution, b *stead.Bundle) (*step, error) {
	data, err := stead.EncodeNextVersion(exe)
	if err != nil {
		return nil, err
	}
	if err := b.Validate(); err != nil {
		return nil, err
	}
	p := &step{exe: exe, next: exe.Version + 1, data: data, b: b}
	if len(b.Emits) > 0 {
		p.events = make([][]byte, len(b.Emits))
		for i := range b.Emits {
			if p.events[i], err = json.Marshal(&b.Emits[i].Event); err != nil {
				return nil, check.Invalidf("emit %d does not encode: %v", i, err)
			}
		}
	}
	if b.Trace != nil {
		if p.trace, err = encodeStep(*b.Trace); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// encodeStep encodes a trace step without its index, which the store assigns and keeps in a
// column.
func encodeStep(t stead.TraceStep) ([]byte, error) {
	t.Index = 0
	b, err := json.Marshal(&t)
	if err != nil {
		return nil, check.Invalidf("trace step does not encode: %v", err)
	}
	return b, nil
}

// Commit implements stead.Writer.
func (s *Store) Commit(ctx context.Context, exe *stead.Execution, b stead.Bundle) ([]int64, error) {
	p, err := plan(exe, &b)
	if err != nil {
		return nil, err
	}
	var seqs []int64
	err = s.write(ctx, func(w *writeStmts) error {
		var err error
		seqs, err = s.apply(w, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	exe.Version = p.next
	return seqs, nil
}

// CommitBatch implements stead.Writer. Every item is validated and encoded before the
// transaction; inside it, each item's compare-and-swap is its first statement, so an item that
// loses it has written nothing and needs no savepoint, and the others go on.
func (s *Store) CommitBatch(ctx context.Context, items []stead.CommitItem) ([]stead.CommitResult, error) {
	if len(items) > stead.MaxBatch {
		return nil, check.Invalidf("batch of %d commits, more than %d", len(items), stead.MaxBatch)
	}
	res := make([]stead.CommitResult, len(items))
	steps := make([]*step, len(items))
	seen := make(map[string]bool, len(items))
	for i := range items {
		it := &items[i]
		if steps[i], res[i].Err = plan(it.Execution, &it.Bundle); res[i].Err != nil {
			continue
		}
		if seen[it.Execution.ID] {
			steps[i] = nil
			res[i].Err = check.Invalidf("execution %q appears more than once in the batch", it.Execution.ID)
			continue
		}
		seen[it.Execution.ID] = true
	}
	err := s.write(ctx, func(w *writeStmts) error {
		for i, p := range steps {
			if p == nil {
				continue
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			seqs, err := s.apply(w, p)
			var ce *stead.ConflictError
			switch {
			case errors.As(err, &ce):
				res[i] = stead.CommitResult{Err: err}
			case err != nil:
				return err
			default:
				res[i] = stead.CommitResult{Seqs: seqs}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i, p := range steps {
		if p != nil && res[i].Err == nil {
			p.exe.Version = p.next
		}
	}
	return res, nil
}

// apply runs the statements of one commit inside tx: the compare-and-swap first, then the side
// effects in bundle order. A lost compare-and-swap returns a *stead.ConflictError having written
// nothing.
func (s *Store) apply(w *writeStmts, p *step) ([]int64, error) {
	e := p.exe
	if err := s.cas(w, p); err != nil {
		return nil, err
	}
	seqs := make([]int64, 0, len(p.events))
	if len(p.events) > 0 {
		st := w.outboxInsert
		for i, ev := range p.events {
			r, err := st.ExecContext(bg, e.ID, p.b.Emits[i].Target, ev)
			if err != nil {
				return nil, err
			}
			seq, err := r.LastInsertId()
			if err != nil {
				return nil, err
			}
			seqs = append(seqs, seq)
		}
	}
	if p.b.ProcessedEventID != "" {
		if _, err := w.markProcessed.ExecContext(bg, e.ID, p.b.ProcessedEventID); err != nil {
			return nil, err
		}
	}
	if len(p.b.Spawns) > 0 {
		st := w.spawnInsert
		for _, sp := range p.b.Spawns {
			var c []byte
			if len(sp.Context) > 0 {
				c = sp.Context
			}
			if _, err := st.ExecContext(bg, e.ID, sp.ChildID, sp.RootPath, c); err != nil {
				return nil, err
			}
		}
	}
	for _, op := range p.b.Timers {
		var err error
		if op.Action == stead.TimerSchedule {
			_, err = w.timerSchedule.ExecContext(bg, e.ID, op.Path, op.FireAt.UnixMicro())
		} else {
			_, err = w.timerCancel.ExecContext(bg, e.ID, op.Path)
		}
		if err != nil {
			return nil, err
		}
	}
	if p.trace != nil {
		if _, err := s.appendTrace(w, e.ID, p.trace); err != nil {
			return nil, err
		}
	}
	return seqs, nil
}

// cas writes the execution row at version p.next if it is stored at p.next-1, or inserts it if it
// is new (version 0) and absent. Otherwise it reads the stored version for the conflict error.
func (s *Store) cas(w *writeStmts, p *step) error {
	e := p.exe
	var (
		r   sql.Result
		err error
	)
	if e.Version == 0 {
		r, err = w.casInsert.ExecContext(bg,
			e.ID, e.DefinitionID, string(e.Status), e.Outcome, e.ActivePath, e.ParentID, p.next,
			micros(e.CreatedAt), micros(e.UpdatedAt), micros(e.FinishedAt), p.data)
	} else {
		r, err = w.casUpdate.ExecContext(bg,
			e.Outcome, e.ActivePath, e.ParentID, p.next,
			micros(e.CreatedAt), micros(e.UpdatedAt), micros(e.FinishedAt), p.data,
			e.ID, e.Version)
	}
	if err != nil {
		return err
	}
	n, err := r.RowsAffected()
	if err != nil {
		return err
	}
	if n == 1 {
		if e.Version > 0 {
			_, err = w.casIndexed.ExecContext(bg, e.ID, e.DefinitionID, string(e.Status))
		}
		return err
	}
	found := int64(-1)
	switch err := w.version.QueryRowContext(bg, e.ID).Scan(&found); {
	case errors.Is(err, sql.ErrNoRows):
		found = -1
	case err != nil:
		return err
	}
	return &stead.ConflictError{ID: e.ID, Expected: e.Version, Found: found}
}

// appendTrace adds one encoded step to the execution's trace and evicts what falls out of the cap.
func (s *Store) appendTrace(w *writeStmts, id string, step []byte) (int64, error) {
	var idx int64
	if err := w.traceAppend.QueryRowContext(bg, id, step).Scan(&idx); err != nil {
		return 0, err
	}
	if s.traceCap > 0 && idx >= int64(s.traceCap) {
		if _, err := w.traceTrim.ExecContext(bg, id, idx-int64(s.traceCap)); err != nil {
			return 0, err
		}
	}
	return idx, nil
}

// AppendTrace implements stead.Writer. The execution must exist.
func (s *Store) AppendTrace(ctx context.Context, id string, t stead.TraceStep) (int64, error) {
	if err := check.ID("execution id", id); err != nil {
		return 0, err
	}
	if err := t.Validate(); err != nil {
		return 0, err
	}
	enc, err := encodeStep(t)
	if err != nil {
		return 0, err
	}
	var idx int64
	err = s.write(ctx, func(w *writeStmts) error {
		var ok bool
		if err := w.exists.QueryRowContext(bg, id).Scan(&ok); err != nil {
			return err
		}
		if !ok {
			return notFound(id)
		}
		idx, err = s.appendTrace(w, id, enc)
		return err
	})
	return idx, err
}

// Purge implements stead.Writer. The rows an execution owns also go by ON DELETE CASCADE; they
// are deleted explicitly as well so that purging an absent id sweeps whatever a crash left.
func (s *Store) Purge(ctx context.Context, id string, expectedVersion int64) (bool, error) {
	if err := check.ID("execution id", id); err != nil {
		return false, err
	}
	var deleted bool
	err := s.write(ctx, func(w *writeStmts) error {
		r, err := w.purgeExecution.ExecContext(bg, id, expectedVersion)
		if err != nil {
			return err
		}
		n, err := r.RowsAffected()
		if err != nil {
			return err
		}
		deleted = n == 1
		if !deleted {
			var exists bool
			if err := w.exists.QueryRowContext(bg, id).Scan(&exists); err != nil {
				return err
			}
			if exists {
				return nil // moved on: touch nothing
			}
		}
		for _, st := range []*sql.Stmt{w.purgeProcessed, w.purgeTimers, w.purgeTrace, w.purgeOutbox, w.purgeSpawns} {
			if _, err := st.ExecContext(bg, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	return deleted, nil
}
