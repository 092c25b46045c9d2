package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/schedule"
)

// schedules keeps a store's schedules in stead_schedules, one implicit transaction a call.
type schedules struct{ b *Backend }

var _ schedule.Provider = (*Backend)(nil)

// Schedules returns the store's schedule backend (schedule.For finds it).
func (b *Backend) Schedules() schedule.Backend { return schedules{b} }

const scheduleColumns = `id, data, paused, next_tick, last_tick, last_execution_id, version, updated_at`

func (s schedules) table() string { return pgdb.Qualifier(s.b.schema) + "stead_schedules" }

func scanSchedule(row pgx.Row) (schedule.Record, error) {
	var r schedule.Record
	var last *time.Time
	if err := row.Scan(&r.ID, &r.Data, &r.Paused, &r.NextTick, &last, &r.LastExecutionID, &r.Version, &r.UpdatedAt); err != nil {
		return r, err
	}
	if last != nil {
		r.LastTick = last.UTC()
	}
	r.NextTick, r.UpdatedAt = r.NextTick.UTC(), r.UpdatedAt.UTC()
	return r, nil
}

func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

func (s schedules) CreateSchedule(ctx context.Context, r schedule.Record) error {
	var n int64
	err := s.b.with(ctx, "create schedule", func(q querier) error {
		tag, err := q.Exec(ctx, `INSERT INTO `+s.table()+` (`+scheduleColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
			ON CONFLICT (id) DO NOTHING`, r.ID, string(r.Data), r.Paused, r.NextTick, nullTime(r.LastTick),
			r.LastExecutionID, r.Version, r.UpdatedAt)
		n = tag.RowsAffected()
		return err
	})
	if err == nil && n == 0 {
		return fmt.Errorf("pgstore: schedule %q: %w", r.ID, stead.ErrAlreadyExists)
	}
	return err
}

func (s schedules) GetSchedule(ctx context.Context, id string) (schedule.Record, error) {
	var r schedule.Record
	var missing bool
	err := s.b.with(ctx, "get schedule", func(q querier) (err error) {
		r, err = scanSchedule(q.QueryRow(ctx, `SELECT `+scheduleColumns+` FROM `+s.table()+` WHERE id = $1`, id))
		if errors.Is(err, pgx.ErrNoRows) {
			missing, err = true, nil
		}
		return err
	})
	if err == nil && missing {
		return r, fmt.Errorf("pgstore: schedule %q: %w", id, stead.ErrNotFound)
	}
	return r, err
}

func (s schedules) query(ctx context.Context, op, sql string, args ...any) ([]schedule.Record, error) {
	var out []schedule.Record
	err := s.b.with(ctx, op, func(q querier) error {
		rows, err := q.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanSchedule(rows)
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	return out, err
}

func (s schedules) ListSchedules(ctx context.Context, after string, limit int) ([]schedule.Record, error) {
	return s.query(ctx, "list schedules", `SELECT `+scheduleColumns+` FROM `+s.table()+` WHERE id > $1 ORDER BY id LIMIT $2`, after, limit)
}

func (s schedules) DueSchedules(ctx context.Context, now time.Time, limit int) ([]schedule.Record, error) {
	return s.query(ctx, "due schedules", `SELECT `+scheduleColumns+` FROM `+s.table()+` WHERE NOT paused AND next_tick <= $1
		ORDER BY next_tick, id LIMIT $2`, now, limit)
}

func (s schedules) UpdateSchedule(ctx context.Context, r schedule.Record) error {
	// One statement: the update, or, when it matched nothing, the version that refused it.
	var found *int64
	var updated bool
	err := s.b.with(ctx, "update schedule", func(q querier) error {
		return q.QueryRow(ctx, `WITH u AS (
				UPDATE `+s.table()+` SET data = $2, paused = $3, next_tick = $4, last_tick = $5, last_execution_id = $6,
					version = $7, updated_at = $8 WHERE id = $1 AND version = $7 - 1 RETURNING 1)
			SELECT EXISTS (SELECT FROM u), (SELECT version FROM `+s.table()+` WHERE id = $1)`,
			r.ID, string(r.Data), r.Paused, r.NextTick, nullTime(r.LastTick), r.LastExecutionID, r.Version, r.UpdatedAt).Scan(&updated, &found)
	})
	switch {
	case err != nil || updated:
		return err
	case found == nil:
		return fmt.Errorf("pgstore: schedule %q: %w", r.ID, stead.ErrNotFound)
	}
	return &stead.ConflictError{ID: r.ID, Expected: r.Version - 1, Found: *found}
}

func (s schedules) DeleteSchedule(ctx context.Context, id string) error {
	var n int64
	err := s.b.with(ctx, "delete schedule", func(q querier) error {
		tag, err := q.Exec(ctx, `DELETE FROM `+s.table()+` WHERE id = $1`, id)
		n = tag.RowsAffected()
		return err
	})
	if err == nil && n == 0 {
		return fmt.Errorf("pgstore: schedule %q: %w", id, stead.ErrNotFound)
	}
	return err
}

func (s schedules) AdvanceSchedule(ctx context.Context, id string, from time.Time, a schedule.Advance) (bool, error) {
	var n int64
	err := s.b.with(ctx, "claim schedule tick", func(q querier) error {
		// Under READ COMMITTED a second claim of the same tick waits for the first's row lock,
		// then re-checks next_tick against the committed row and matches nothing.
		tag, err := q.Exec(ctx, `UPDATE `+s.table()+` SET next_tick = $3, version = version + 1, updated_at = $4,
			last_tick = CASE WHEN $5 THEN $6 ELSE last_tick END,
			last_execution_id = CASE WHEN $5 THEN $7 ELSE last_execution_id END
			WHERE id = $1 AND next_tick = $2 AND NOT paused`,
			id, from, a.NextTick, a.UpdatedAt, a.Fired, nullTime(a.LastTick), a.LastExecutionID)
		n = tag.RowsAffected()
		return err
	})
	return n == 1, err
}
