package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"slices"
	"time"

	"github.com/steadhq/stead"
)

// ClaimOutbox is one UPDATE ... RETURNING inside a write transaction: the write lock makes it
// exclusive across connections and processes. The lease runs until until, as the Store computed
// it; the store has no clock of its own.
func (b *backend) ClaimOutbox(ctx context.Context, now, until time.Time, limit int) ([]stead.OutboxEntry, error) {
	var out []stead.OutboxEntry
	err := b.write(ctx, func(st *writeStmts) error {
		rows, err := st.ClaimOutbox.QueryContext(bg, until.UnixMicro(), now.UnixMicro(), limit)
		if err != nil {
			return err
		}
		out, err = scanOutbox(rows)
		return err
	})
	if err != nil {
		return nil, err
	}
	// RETURNING gives no order guarantee.
	slices.SortFunc(out, func(a, b stead.OutboxEntry) int { return cmp.Compare(a.Seq, b.Seq) })
	return out, nil
}

func (b *backend) ClaimSpawns(ctx context.Context, now, until time.Time, limit int) ([]stead.SpawnEntry, error) {
	var out []stead.SpawnEntry
	err := b.write(ctx, func(st *writeStmts) error {
		rows, err := st.ClaimSpawns.QueryContext(bg, until.UnixMicro(), now.UnixMicro(), limit)
		if err != nil {
			return err
		}
		out, err = scanSpawns(rows)
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b stead.SpawnEntry) int { return cmp.Compare(a.Seq, b.Seq) })
	return out, nil
}

func (b *backend) AckOutbox(ctx context.Context, seqs []int64) error {
	return b.ack(ctx, seqs, func(st *writeStmts) *sql.Stmt { return st.AckOutbox })
}

func (b *backend) AckSpawns(ctx context.Context, seqs []int64) error {
	return b.ack(ctx, seqs, func(st *writeStmts) *sql.Stmt { return st.AckSpawns })
}

func (b *backend) ack(ctx context.Context, seqs []int64, del func(*writeStmts) *sql.Stmt) error {
	return b.write(ctx, func(st *writeStmts) error {
		s := del(st)
		for _, q := range seqs {
			if _, err := s.ExecContext(bg, q); err != nil {
				return err
			}
		}
		return nil
	})
}

func (b *backend) DueTimers(ctx context.Context, now time.Time, limit int) ([]stead.Timer, error) {
	var out []stead.Timer
	err := b.read(ctx, func(r *readStmts) error {
		rows, err := r.DueTimers.QueryContext(ctx, now.UnixMicro(), limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		out = out[:0]
		for rows.Next() {
			var (
				t  stead.Timer
				at sql.NullInt64
			)
			if err := rows.Scan(&t.ExecutionID, &t.Path, &at); err != nil {
				return err
			}
			t.FireAt = fromMicros(at)
			out = append(out, t)
		}
		return rows.Err()
	})
	return out, err
}

// DeleteTimer compares fire times in microseconds, as they are stored.
func (b *backend) DeleteTimer(ctx context.Context, t stead.Timer) (bool, error) {
	var deleted bool
	err := b.write(ctx, func(st *writeStmts) error {
		r, err := st.DeleteTimer.ExecContext(bg, t.ExecutionID, t.Path, t.FireAt.UnixMicro())
		if err != nil {
			return err
		}
		n, err := r.RowsAffected()
		deleted = n == 1
		return err
	})
	return deleted, err
}
