package pgstore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/internal/check"
	"github.com/steadhq/stead/internal/pgstoresql"
)

// ClaimOutbox leases up to limit outbox entries, oldest first, that no live lease holds. The
// claim is one UPDATE over a FOR UPDATE SKIP LOCKED subquery that walks the primary key from the
// oldest seq and stops at limit rows: relays on many hosts skip each other's rows instead of
// waiting, and the cost does not grow with the backlog (only with the rows under a live lease
// ahead of the first free one).
func (s *Store) ClaimOutbox(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]stead.OutboxEntry, error) {
	n, err := checkClaim(now, lease, limit)
	if err != nil {
		return nil, fmt.Errorf("pgstore: claim outbox: %w", err)
	}
	out, err := s.queryOutbox(ctx, "claim outbox", pgstoresql.Limit(s.sql.ClaimOutbox, n), now, now.Add(lease))
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b stead.OutboxEntry) int { return cmp.Compare(a.Seq, b.Seq) })
	return out, nil
}

// AckOutbox deletes delivered entries; unknown seqs are ignored.
func (s *Store) AckOutbox(ctx context.Context, seqs []int64) error {
	return s.ack(ctx, "ack outbox", s.sql.AckOutbox, seqs)
}

// ClaimSpawns is ClaimOutbox for spawn intents.
func (s *Store) ClaimSpawns(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]stead.SpawnEntry, error) {
	n, err := checkClaim(now, lease, limit)
	if err != nil {
		return nil, fmt.Errorf("pgstore: claim spawns: %w", err)
	}
	out, err := s.querySpawns(ctx, "claim spawns", pgstoresql.Limit(s.sql.ClaimSpawns, n), now, now.Add(lease))
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b stead.SpawnEntry) int { return cmp.Compare(a.Seq, b.Seq) })
	return out, nil
}

// AckSpawns deletes handled spawn intents; unknown seqs are ignored.
func (s *Store) AckSpawns(ctx context.Context, seqs []int64) error {
	return s.ack(ctx, "ack spawns", s.sql.AckSpawns, seqs)
}

// DueTimers returns up to limit timers with FireAt <= now, earliest first, from the
// (fire_at, execution_id, path) index.
func (s *Store) DueTimers(ctx context.Context, now time.Time, limit int) ([]stead.Timer, error) {
	n, err := checkLimit(limit)
	if err != nil {
		return nil, fmt.Errorf("pgstore: due timers: %w", err)
	}
	return s.queryTimers(ctx, "due timers", pgstoresql.Limit(s.sql.DueTimers, n), now)
}

// DeleteTimer deletes the timer only if it still fires at t.FireAt.
func (s *Store) DeleteTimer(ctx context.Context, t stead.Timer) (bool, error) {
	if err := check.ID("execution id", t.ExecutionID); err != nil {
		return false, fmt.Errorf("pgstore: delete timer: %w", err)
	}
	if err := check.ID("timer path", t.Path); err != nil {
		return false, fmt.Errorf("pgstore: delete timer: %w", err)
	}
	var deleted bool
	err := s.with(ctx, "delete timer", func(q querier) error {
		tag, err := q.Exec(ctx, s.sql.DeleteTimer, t.ExecutionID, t.Path, t.FireAt)
		deleted = tag.RowsAffected() > 0
		return err
	})
	return deleted, err
}

// AppendTrace appends one step to the execution's trace on its own and returns its index. The
// execution must exist (stead.ErrNotFound otherwise): its row holds the trace counter.
func (s *Store) AppendTrace(ctx context.Context, id string, step stead.TraceStep) (int64, error) {
	if err := check.ID("execution id", id); err != nil {
		return 0, fmt.Errorf("pgstore: append trace: %w", err)
	}
	if err := step.Validate(); err != nil {
		return 0, fmt.Errorf("pgstore: append trace: %w", err)
	}
	entry, err := encodeStep(step)
	if err != nil {
		return 0, fmt.Errorf("pgstore: append trace: %w", err)
	}
	var idx int64
	err = s.with(ctx, "append trace", func(q querier) error {
		return q.QueryRow(ctx, s.sql.AppendTrace, id, entry, int64(s.cfg.traceCap)).Scan(&idx)
	})
	if err != nil {
		return 0, notFound(err, id)
	}
	return idx, nil
}

// Purge deletes the execution at expectedVersion and every row that belongs to it, in one
// statement (see internal/pgstoresql).
func (s *Store) Purge(ctx context.Context, id string, expectedVersion int64) (bool, error) {
	if err := check.ID("execution id", id); err != nil {
		return false, fmt.Errorf("pgstore: purge: %w", err)
	}
	if expectedVersion < 0 {
		return false, check.Invalidf("pgstore: purge %q: negative version %d", id, expectedVersion)
	}
	var deleted bool
	err := s.with(ctx, "purge", func(q querier) error {
		return q.QueryRow(ctx, s.sql.Purge, id, expectedVersion).Scan(&deleted)
	})
	return deleted, err
}

func checkClaim(now time.Time, lease time.Duration, limit int) (int, error) {
	if now.IsZero() {
		return 0, check.Invalidf("claim time is zero")
	}
	if lease <= 0 {
		return 0, check.Invalidf("lease %v is not positive", lease)
	}
	return checkLimit(limit)
}

func (s *Store) ack(ctx context.Context, op, sql string, seqs []int64) error {
	if len(seqs) > stead.MaxBatch {
		return check.Invalidf("pgstore: %s: %d seqs, more than %d", op, len(seqs), stead.MaxBatch)
	}
	if len(seqs) == 0 {
		return nil
	}
	return s.with(ctx, op, func(q querier) error {
		_, err := q.Exec(ctx, sql, seqs)
		return err
	})
}

func (s *Store) queryOutbox(ctx context.Context, op, sql string, args ...any) ([]stead.OutboxEntry, error) {
	var out []stead.OutboxEntry
	err := s.with(ctx, op, func(q querier) error {
		rows, err := q.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		var e stead.OutboxEntry
		var target pgtype.Text
		var event []byte
		_, err = pgx.ForEachRow(rows, []any{&e.Seq, &e.Source, &target, &event}, func() error {
			e.Target = target.String
			e.Event = stead.Event{}
			if err := json.Unmarshal(event, &e.Event); err != nil {
				return fmt.Errorf("decode outbox event %d: %w", e.Seq, err)
			}
			out = append(out, e)
			return nil
		})
		return err
	})
	return out, err
}

func (s *Store) querySpawns(ctx context.Context, op, sql string, args ...any) ([]stead.SpawnEntry, error) {
	var out []stead.SpawnEntry
	err := s.with(ctx, op, func(q querier) error {
		rows, err := q.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		var e stead.SpawnEntry
		var context pgtype.Text
		_, err = pgx.ForEachRow(rows, []any{&e.Seq, &e.ParentID, &e.ChildID, &e.RootPath, &context}, func() error {
			e.Context = nil
			if context.Valid {
				e.Context = []byte(context.String)
			}
			out = append(out, e)
			return nil
		})
		return err
	})
	return out, err
}

func (s *Store) queryTimers(ctx context.Context, op, sql string, args ...any) ([]stead.Timer, error) {
	var out []stead.Timer
	err := s.with(ctx, op, func(q querier) error {
		rows, err := q.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		var t stead.Timer
		_, err = pgx.ForEachRow(rows, []any{&t.ExecutionID, &t.Path, &t.FireAt}, func() error {
			t.FireAt = t.FireAt.UTC()
			out = append(out, t)
			return nil
		})
		return err
	})
	return out, err
}
