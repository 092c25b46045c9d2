package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"slices"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/internal/check"
)

// ClaimOutbox implements stead.Relay. The claim is one UPDATE ... RETURNING inside a write
// transaction: the write lock makes it exclusive across connections and processes.
func (s *Store) ClaimOutbox(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]stead.OutboxEntry, error) {
	limit, err := checkClaim(lease, limit)
	if err != nil {
		return nil, err
	}
	var out []stead.OutboxEntry
	err = s.write(ctx, func(w *writeStmts) error {
		rows, err := w.claimOutbox.QueryContext(bg, leaseEnd(now, lease), now.UnixMicro(), limit)
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

// ClaimSpawns implements stead.Relay.
func (s *Store) ClaimSpawns(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]stead.SpawnEntry, error) {
	limit, err := checkClaim(lease, limit)
	if err != nil {
		return nil, err
	}
	var out []stead.SpawnEntry
	err = s.write(ctx, func(w *writeStmts) error {
		rows, err := w.claimSpawns.QueryContext(bg, leaseEnd(now, lease), now.UnixMicro(), limit)
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

func checkAcks(seqs []int64) error {
	if len(seqs) > stead.MaxBatch {
		return check.Invalidf("%d sequence numbers, more than %d", len(seqs), stead.MaxBatch)
	}
	return nil
}

// AckOutbox implements stead.Relay.
func (s *Store) AckOutbox(ctx context.Context, seqs []int64) error {
	return s.ack(ctx, seqs, func(w *writeStmts) *sql.Stmt { return w.ackOutbox })
}

// AckSpawns implements stead.Relay.
func (s *Store) AckSpawns(ctx context.Context, seqs []int64) error {
	return s.ack(ctx, seqs, func(w *writeStmts) *sql.Stmt { return w.ackSpawn })
}

func (s *Store) ack(ctx context.Context, seqs []int64, del func(*writeStmts) *sql.Stmt) error {
	if err := checkAcks(seqs); err != nil {
		return err
	}
	if len(seqs) == 0 {
		return s.enter(ctx)
	}
	return s.write(ctx, func(w *writeStmts) error {
		st := del(w)
		for _, q := range seqs {
			if _, err := st.ExecContext(bg, q); err != nil {
				return err
			}
		}
		return nil
	})
}

// DueTimers implements stead.Relay.
func (s *Store) DueTimers(ctx context.Context, now time.Time, limit int) ([]stead.Timer, error) {
	limit, err := check.Limit("limit", limit, stead.DefaultListLimit, stead.MaxListLimit)
	if err != nil {
		return nil, err
	}
	var out []stead.Timer
	err = s.read(ctx, func(r *readStmts) error {
		rows, err := r.dueTimers.QueryContext(ctx, now.UnixMicro(), limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		out = []stead.Timer{}
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

// DeleteTimer implements stead.Relay.
func (s *Store) DeleteTimer(ctx context.Context, t stead.Timer) (bool, error) {
	if err := check.ID("execution id", t.ExecutionID); err != nil {
		return false, err
	}
	if err := check.ID("timer path", t.Path); err != nil {
		return false, err
	}
	var deleted bool
	err := s.write(ctx, func(w *writeStmts) error {
		r, err := w.deleteTimer.ExecContext(bg, t.ExecutionID, t.Path, t.FireAt.UnixMicro())
		if err != nil {
			return err
		}
		n, err := r.RowsAffected()
		deleted = n == 1
		return err
	})
	return deleted, err
}
