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
)

// ClaimOutbox implements stead.Backend. The claim is one UPDATE over a FOR UPDATE SKIP LOCKED
// subquery that walks the primary key from the oldest seq and stops at limit rows: relays on
// many hosts skip each other's rows instead of waiting, and the cost does not grow with the
// backlog (only with the rows under a live lease ahead of the first free one).
func (b *Backend) ClaimOutbox(ctx context.Context, now, until time.Time, limit int) ([]stead.OutboxEntry, error) {
	out, err := b.queryOutbox(ctx, "claim outbox", withLimit(b.st.ClaimOutbox, limit), now, until)
	if err != nil {
		return nil, err
	}
	// UPDATE … RETURNING returns rows in no particular order.
	slices.SortFunc(out, func(x, y stead.OutboxEntry) int { return cmp.Compare(x.Seq, y.Seq) })
	return out, nil
}

// AckOutbox implements stead.Backend.
func (b *Backend) AckOutbox(ctx context.Context, seqs []int64) error {
	return b.exec(ctx, "ack outbox", b.st.AckOutbox, seqs)
}

// ClaimSpawns implements stead.Backend, like ClaimOutbox.
func (b *Backend) ClaimSpawns(ctx context.Context, now, until time.Time, limit int) ([]stead.SpawnEntry, error) {
	out, err := b.querySpawns(ctx, "claim spawns", withLimit(b.st.ClaimSpawns, limit), now, until)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(x, y stead.SpawnEntry) int { return cmp.Compare(x.Seq, y.Seq) })
	return out, nil
}

// AckSpawns implements stead.Backend.
func (b *Backend) AckSpawns(ctx context.Context, seqs []int64) error {
	return b.exec(ctx, "ack spawns", b.st.AckSpawns, seqs)
}

// DueTimers implements stead.Backend, from the (fire_at, execution_id, path) index.
func (b *Backend) DueTimers(ctx context.Context, now time.Time, limit int) ([]stead.Timer, error) {
	return b.queryTimers(ctx, "due timers", withLimit(b.st.DueTimers, limit), now)
}

// DeleteTimer implements stead.Backend.
func (b *Backend) DeleteTimer(ctx context.Context, t stead.Timer) (bool, error) {
	var deleted bool
	err := b.with(ctx, "delete timer", func(q querier) error {
		tag, err := q.Exec(ctx, b.st.DeleteTimer, t.ExecutionID, t.Path, t.FireAt)
		deleted = tag.RowsAffected() > 0
		return err
	})
	return deleted, err
}

// AppendTrace implements stead.Backend. The execution must exist: its row holds the trace
// counter.
func (b *Backend) AppendTrace(ctx context.Context, id string, step stead.TraceStep) (int64, error) {
	entry, err := json.Marshal(&step)
	if err != nil {
		return 0, fmt.Errorf("pgstore: append trace: encode step: %w", err)
	}
	var idx int64
	err = b.with(ctx, "append trace", func(q querier) error {
		// A string, not []byte: sent with unnamed statements (QueryExecModeExec), []byte is bytea.
		return q.QueryRow(ctx, b.st.AppendTrace, id, string(entry), b.traceCap).Scan(&idx)
	})
	if err != nil {
		return 0, notFound(err, id)
	}
	return idx, nil
}

// Purge implements stead.Backend, in one statement.
func (b *Backend) Purge(ctx context.Context, id string, expectedVersion int64) (bool, error) {
	var deleted bool
	err := b.with(ctx, "purge", func(q querier) error {
		return q.QueryRow(ctx, b.st.Purge, id, expectedVersion).Scan(&deleted)
	})
	return deleted, err
}

func (b *Backend) exec(ctx context.Context, op, sql string, args ...any) error {
	return b.with(ctx, op, func(q querier) error {
		_, err := q.Exec(ctx, sql, args...)
		return err
	})
}

func (b *Backend) queryOutbox(ctx context.Context, op, sql string, args ...any) ([]stead.OutboxEntry, error) {
	var out []stead.OutboxEntry
	err := b.with(ctx, op, func(q querier) error {
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

func (b *Backend) querySpawns(ctx context.Context, op, sql string, args ...any) ([]stead.SpawnEntry, error) {
	var out []stead.SpawnEntry
	err := b.with(ctx, op, func(q querier) error {
		rows, err := q.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		var e stead.SpawnEntry
		var context pgtype.Text
		_, err = pgx.ForEachRow(rows, []any{&e.Seq, &e.ParentID, &e.ChildID, &e.RootPath, &context, &e.Trace}, func() error {
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

func (b *Backend) queryTimers(ctx context.Context, op, sql string, args ...any) ([]stead.Timer, error) {
	var out []stead.Timer
	err := b.with(ctx, op, func(q querier) error {
		rows, err := q.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		var t stead.Timer
		_, err = pgx.ForEachRow(rows, []any{&t.ExecutionID, &t.Path, &t.FireAt}, func() error {
			out = append(out, t)
			return nil
		})
		return err
	})
	return out, err
}
