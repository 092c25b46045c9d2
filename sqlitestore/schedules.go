package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/schedule"
	"github.com/steadhq/stead/sqlitedb"
)

// schedules keeps a store's schedules in stead_schedules. Its statements are few and rare next
// to a worker's (a runner's look a second), so they are not prepared.
type schedules struct{ b *backend }

var _ schedule.Provider = (*backend)(nil)

// Schedules returns the store's schedule backend (schedule.For finds it).
func (b *backend) Schedules() schedule.Backend { return schedules{b} }

const scheduleColumns = `id, data, paused, next_tick, last_tick, last_execution_id, version, updated_at`

// swrite runs fn in a write transaction under the database's write gate, retried while another
// process holds the lock.
func (s schedules) swrite(ctx context.Context, fn func(*sql.Tx) error) error {
	d := s.b.db
	if err := d.Lock(ctx); err != nil {
		return fmt.Errorf("sqlitestore: nothing written: %w", err)
	}
	defer d.Unlock()
	err := sqlitedb.Retry(ctx, d.BusyTimeout, func() error {
		tx, err := d.W.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if err := fn(tx); err != nil {
			return err
		}
		return tx.Commit()
	})
	return s.b.classify(err)
}

func scanSchedule(row interface{ Scan(...any) error }) (schedule.Record, error) {
	var r schedule.Record
	var data string
	var next, updated int64
	var last sql.NullInt64
	if err := row.Scan(&r.ID, &data, &r.Paused, &next, &last, &r.LastExecutionID, &r.Version, &updated); err != nil {
		return r, err
	}
	r.Data = []byte(data)
	r.NextTick = time.UnixMicro(next).UTC()
	r.LastTick = fromMicros(last)
	r.UpdatedAt = time.UnixMicro(updated).UTC()
	return r, nil
}

func (s schedules) CreateSchedule(ctx context.Context, r schedule.Record) error {
	err := s.swrite(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO stead_schedules (`+scheduleColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO NOTHING`, r.ID, string(r.Data), r.Paused, r.NextTick.UnixMicro(), micros(r.LastTick),
			r.LastExecutionID, r.Version, r.UpdatedAt.UnixMicro())
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("sqlitestore: schedule %q: %w", r.ID, stead.ErrAlreadyExists)
		}
		return nil
	})
	return err
}

func (s schedules) GetSchedule(ctx context.Context, id string) (schedule.Record, error) {
	var r schedule.Record
	err := sqlitedb.Retry(ctx, s.b.db.BusyTimeout, func() (err error) {
		r, err = scanSchedule(s.b.db.R.QueryRowContext(ctx, `SELECT `+scheduleColumns+` FROM stead_schedules WHERE id = ?`, id))
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("sqlitestore: schedule %q: %w", id, stead.ErrNotFound)
	}
	return r, s.b.classify(err)
}

func (s schedules) query(ctx context.Context, q string, args ...any) ([]schedule.Record, error) {
	var out []schedule.Record
	err := sqlitedb.Retry(ctx, s.b.db.BusyTimeout, func() error {
		out = out[:0]
		rows, err := s.b.db.R.QueryContext(ctx, q, args...)
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
	return out, s.b.classify(err)
}

func (s schedules) ListSchedules(ctx context.Context, after string, limit int) ([]schedule.Record, error) {
	return s.query(ctx, `SELECT `+scheduleColumns+` FROM stead_schedules WHERE id > ? ORDER BY id LIMIT ?`, after, limit)
}

func (s schedules) DueSchedules(ctx context.Context, now time.Time, limit int) ([]schedule.Record, error) {
	return s.query(ctx, `SELECT `+scheduleColumns+` FROM stead_schedules WHERE paused = 0 AND next_tick <= ?
		ORDER BY next_tick, id LIMIT ?`, now.UnixMicro(), limit)
}

func (s schedules) UpdateSchedule(ctx context.Context, r schedule.Record) error {
	return s.swrite(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE stead_schedules SET data = ?, paused = ?, next_tick = ?, last_tick = ?,
			last_execution_id = ?, version = ?, updated_at = ? WHERE id = ? AND version = ?`,
			string(r.Data), r.Paused, r.NextTick.UnixMicro(), micros(r.LastTick), r.LastExecutionID, r.Version,
			r.UpdatedAt.UnixMicro(), r.ID, r.Version-1)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return nil
		}
		var found int64
		err = tx.QueryRowContext(ctx, `SELECT version FROM stead_schedules WHERE id = ?`, r.ID).Scan(&found)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("sqlitestore: schedule %q: %w", r.ID, stead.ErrNotFound)
		}
		if err != nil {
			return err
		}
		return &stead.ConflictError{ID: r.ID, Expected: r.Version - 1, Found: found}
	})
}

func (s schedules) DeleteSchedule(ctx context.Context, id string) error {
	return s.swrite(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM stead_schedules WHERE id = ?`, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("sqlitestore: schedule %q: %w", id, stead.ErrNotFound)
		}
		return nil
	})
}

func (s schedules) AdvanceSchedule(ctx context.Context, id string, from time.Time, a schedule.Advance) (bool, error) {
	var won bool
	err := s.swrite(ctx, func(tx *sql.Tx) error {
		q := `UPDATE stead_schedules SET next_tick = ?, version = version + 1, updated_at = ? WHERE id = ? AND next_tick = ? AND paused = 0`
		args := []any{a.NextTick.UnixMicro(), a.UpdatedAt.UnixMicro(), id, from.UnixMicro()}
		if a.Fired {
			q = `UPDATE stead_schedules SET next_tick = ?, version = version + 1, updated_at = ?, last_tick = ?, last_execution_id = ?
				WHERE id = ? AND next_tick = ? AND paused = 0`
			args = []any{a.NextTick.UnixMicro(), a.UpdatedAt.UnixMicro(), a.LastTick.UnixMicro(), a.LastExecutionID, id, from.UnixMicro()}
		}
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		won = n == 1
		return err
	})
	return won && err == nil, err
}
