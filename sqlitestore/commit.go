package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/steadhq/stead"
)

// encoded is what a commit writes besides the record, encoded before the transaction so that the
// write lock is held only for the statements themselves.
type encoded struct {
	events [][]byte // one per emit
	trace  []byte   // nil when the bundle has no trace step
}

func encode(w *stead.Write) (encoded, error) {
	var enc encoded
	b := &w.Bundle
	if len(b.Emits) > 0 {
		enc.events = make([][]byte, len(b.Emits))
		for i := range b.Emits {
			var err error
			if enc.events[i], err = json.Marshal(&b.Emits[i].Event); err != nil {
				return enc, fmt.Errorf("sqlitestore: emit %d: %w", i, err)
			}
		}
	}
	if b.Trace != nil {
		var err error
		if enc.trace, err = json.Marshal(b.Trace); err != nil {
			return enc, fmt.Errorf("sqlitestore: trace step: %w", err)
		}
	}
	return enc, nil
}

func (b *backend) Commit(ctx context.Context, w *stead.Write) ([]int64, error) {
	enc, err := encode(w)
	if err != nil {
		return nil, err
	}
	var seqs []int64
	err = b.write(ctx, func(st *writeStmts) error {
		var err error
		seqs, err = b.apply(st, w, &enc)
		return err
	})
	if err != nil {
		return nil, err
	}
	return seqs, nil
}

// CommitBatch runs every write in one transaction. Each write's compare-and-swap is its first
// statement, so one that loses has written nothing and needs no savepoint, and the others go on.
func (b *backend) CommitBatch(ctx context.Context, ws []*stead.Write) ([]stead.WriteResult, error) {
	encs, err := encodeAll(ws)
	if err != nil {
		return nil, err
	}
	res := make([]stead.WriteResult, len(ws))
	err = b.write(ctx, func(st *writeStmts) error { return b.applyAll(ctx, st, ws, encs, res) })
	if err != nil {
		return nil, err
	}
	return res, nil
}

// encodeAll encodes what the writes of a batch write besides their records (see encoded).
func encodeAll(ws []*stead.Write) ([]encoded, error) {
	encs := make([]encoded, len(ws))
	for i, w := range ws {
		var err error
		if encs[i], err = encode(w); err != nil {
			return nil, err
		}
	}
	return encs, nil
}

// applyAll applies the writes of a batch in the transaction, filling res: a lost
// compare-and-swap is its write's result, and the others go on; any other error ends it.
func (b *backend) applyAll(ctx context.Context, st *writeStmts, ws []*stead.Write, encs []encoded, res []stead.WriteResult) error {
	for i, w := range ws {
		if err := ctx.Err(); err != nil {
			return err
		}
		seqs, err := b.apply(st, w, &encs[i])
		var ce *stead.ConflictError
		switch {
		case errors.As(err, &ce):
			res[i] = stead.WriteResult{Err: err}
		case err != nil:
			return err
		default:
			res[i] = stead.WriteResult{Seqs: seqs}
		}
	}
	return nil
}

// apply runs the statements of one commit inside the transaction: the compare-and-swap first,
// then the side effects in bundle order. A lost compare-and-swap returns a *stead.ConflictError
// having written nothing.
func (b *backend) apply(st *writeStmts, w *stead.Write, enc *encoded) ([]int64, error) {
	if err := cas(st, w); err != nil {
		return nil, err
	}
	id, bd := w.Execution.ID, &w.Bundle
	var seqs []int64
	if len(enc.events) > 0 {
		seqs = make([]int64, 0, len(enc.events))
		for i, ev := range enc.events {
			r, err := st.CommitEmit.ExecContext(bg, id, bd.Emits[i].Target, ev)
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
	if bd.ProcessedEventID != "" {
		if _, err := st.CommitProcessed.ExecContext(bg, id, bd.ProcessedEventID); err != nil {
			return nil, err
		}
		// In-process and prepared: one insert per event costs less than building one statement.
		for _, ev := range bd.AlsoProcessed {
			if _, err := st.CommitProcessed.ExecContext(bg, id, ev); err != nil {
				return nil, err
			}
		}
	}
	for _, sp := range bd.Spawns {
		if _, err := st.CommitSpawn.ExecContext(bg, id, sp.ChildID, sp.RootPath, []byte(sp.Context), sp.Trace); err != nil {
			return nil, err
		}
	}
	// The Store reduced the timer ops to one per path: applying them in order is their net effect.
	for _, op := range bd.Timers {
		var err error
		if op.Action == stead.TimerSchedule {
			_, err = st.CommitSchedule.ExecContext(bg, id, op.Path, op.FireAt.UnixMicro())
		} else {
			_, err = st.CommitCancel.ExecContext(bg, id, op.Path)
		}
		if err != nil {
			return nil, err
		}
	}
	if enc.trace != nil {
		if _, err := b.appendTrace(st, id, enc.trace); err != nil {
			return nil, err
		}
	}
	if w.ReplaceAttributes {
		if err := replaceAttrs(st, w.Execution); err != nil {
			return nil, err
		}
	}
	return seqs, nil
}

// replaceAttrs makes the execution's attribute rows its attributes: a string in s, any other
// kind's number in n.
func replaceAttrs(st *writeStmts, e *stead.Execution) error {
	if _, err := st.CommitAttrsClear.ExecContext(bg, e.ID); err != nil {
		return err
	}
	for k, v := range e.Attributes {
		var s, n any
		if v.Kind() == stead.AttrKindString {
			s = v.Str()
		} else {
			n = v.Num()
		}
		if _, err := st.CommitAttr.ExecContext(bg, e.ID, k, int(v.Kind()), s, n); err != nil {
			return err
		}
	}
	return nil
}

// cas writes the execution row at w.Execution.Version if it is stored at w.Expected, or inserts
// it if w.Expected is 0 and there is no row. Otherwise it reads the stored version for the
// conflict error.
func cas(st *writeStmts, w *stead.Write) error {
	e := w.Execution
	var (
		r   sql.Result
		err error
	)
	if w.Expected == 0 {
		r, err = st.CommitInsert.ExecContext(bg,
			e.ID, e.DefinitionID, string(e.Status), e.Outcome, e.ActivePath, e.ParentID, e.Version,
			micros(e.CreatedAt), micros(e.UpdatedAt), micros(e.FinishedAt), w.Record)
	} else {
		r, err = st.CommitUpdate.ExecContext(bg,
			e.Outcome, e.ActivePath, e.Version, micros(e.CreatedAt), micros(e.UpdatedAt), w.Record,
			e.ID, w.Expected)
	}
	if err != nil {
		return err
	}
	n, err := r.RowsAffected()
	if err != nil {
		return err
	}
	if n == 1 {
		if w.Expected > 0 {
			_, err = st.CommitIndexed.ExecContext(bg, e.ID, e.DefinitionID, string(e.Status), e.ParentID, micros(e.FinishedAt))
		}
		return err
	}
	found := int64(-1)
	switch err := st.CommitVersion.QueryRowContext(bg, e.ID).Scan(&found); {
	case errors.Is(err, sql.ErrNoRows):
		found = -1
	case err != nil:
		return err
	}
	return &stead.ConflictError{ID: e.ID, Expected: w.Expected, Found: found}
}

// appendTrace adds one encoded step to the execution's trace and evicts what falls out of the
// cap. It returns ErrNotFound when the execution does not exist.
func (b *backend) appendTrace(st *writeStmts, id string, step []byte) (int64, error) {
	var idx int64
	err := st.AppendTrace.QueryRowContext(bg, id, step).Scan(&idx)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, notFound(id)
	}
	if err != nil {
		return 0, err
	}
	if b.traceCap > 0 && idx >= int64(b.traceCap) {
		if _, err := st.AppendTraceTrim.ExecContext(bg, id, idx-int64(b.traceCap)); err != nil {
			return 0, err
		}
	}
	return idx, nil
}

func (b *backend) AppendTrace(ctx context.Context, id string, step stead.TraceStep) (int64, error) {
	enc, err := json.Marshal(&step)
	if err != nil {
		return 0, fmt.Errorf("sqlitestore: trace step: %w", err)
	}
	var idx int64
	err = b.write(ctx, func(st *writeStmts) error {
		idx, err = b.appendTrace(st, id, enc)
		return err
	})
	return idx, err
}

// Purge deletes the execution if it is stored at expectedVersion, then sweeps the rows of an
// absent execution. Most go by ON DELETE CASCADE already; the sweeps catch the outbox entries
// addressed to it (a target is no foreign key) and rows written with foreign keys off.
func (b *backend) Purge(ctx context.Context, id string, expectedVersion int64) (bool, error) {
	var deleted bool
	err := b.write(ctx, func(st *writeStmts) error {
		r, err := st.Purge.ExecContext(bg, id, expectedVersion)
		if err != nil {
			return err
		}
		n, err := r.RowsAffected()
		if err != nil {
			return err
		}
		deleted = n == 1
		for _, s := range []*sql.Stmt{st.PurgeProcessed, st.PurgeTimers, st.PurgeTrace, st.PurgeOutbox, st.PurgeSpawns, st.PurgeAttrs} {
			if _, err := s.ExecContext(bg, id); err != nil {
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
