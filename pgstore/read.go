package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/internal/check"
	"github.com/steadhq/stead/internal/listing"
	"github.com/steadhq/stead/internal/pgstoresql"
	"github.com/steadhq/stead/pgdb"
)

// Load returns the execution, or an error wrapping stead.ErrNotFound.
func (s *Store) Load(ctx context.Context, id string) (*stead.Execution, error) {
	if err := check.ID("execution id", id); err != nil {
		return nil, fmt.Errorf("pgstore: load: %w", err)
	}
	var data []byte
	err := s.with(ctx, "load", func(q querier) error {
		return q.QueryRow(ctx, s.sql.Load, id).Scan(&data)
	})
	if err != nil {
		return nil, notFound(err, id)
	}
	return decode(data)
}

// LoadForEvent loads the execution and whether it already processed eventID, in one query.
func (s *Store) LoadForEvent(ctx context.Context, id, eventID string) (*stead.Execution, bool, error) {
	if err := (stead.EventRef{ExecutionID: id, EventID: eventID}).Validate(); err != nil {
		return nil, false, fmt.Errorf("pgstore: load for event: %w", err)
	}
	var data []byte
	var processed bool
	err := s.with(ctx, "load for event", func(q querier) error {
		return q.QueryRow(ctx, s.sql.LoadForEvent, id, eventID).Scan(&data, &processed)
	})
	if err != nil {
		return nil, false, notFound(err, id)
	}
	exe, err := decode(data)
	if err != nil {
		return nil, false, err
	}
	return exe, processed, nil
}

// LoadForEvents is LoadForEvent for many pairs in one query.
func (s *Store) LoadForEvents(ctx context.Context, refs []stead.EventRef) ([]stead.Loaded, error) {
	return s.loadForEvents(ctx, nil, refs)
}

// LoadForEventsTx is LoadForEvents on the caller's transaction, so that a runtime can load, step
// and commit (CommitBatchTx) in one transaction. The caller commits or rolls back tx.
func (s *Store) LoadForEventsTx(ctx context.Context, tx pgx.Tx, refs []stead.EventRef) ([]stead.Loaded, error) {
	if tx == nil {
		return nil, check.Invalidf("pgstore: load for events: transaction is nil")
	}
	return s.loadForEvents(ctx, tx, refs)
}

func (s *Store) loadForEvents(ctx context.Context, tx pgx.Tx, refs []stead.EventRef) ([]stead.Loaded, error) {
	const op = "load for events"
	if len(refs) > stead.MaxBatch {
		return nil, check.Invalidf("pgstore: %s: %d refs, more than %d", op, len(refs), stead.MaxBatch)
	}
	out := make([]stead.Loaded, len(refs))
	if len(refs) == 0 {
		return out, nil
	}
	ids := make([]string, len(refs))
	events := make([]string, len(refs))
	for i, r := range refs {
		if err := r.Validate(); err != nil {
			return nil, fmt.Errorf("pgstore: %s: ref %d: %w", op, i, err)
		}
		ids[i], events[i] = r.ExecutionID, r.EventID
	}
	run := func(q querier) error {
		rows, err := q.Query(ctx, s.sql.LoadForEvents, ids, events)
		if err != nil {
			return err
		}
		var ord int64
		var data []byte
		var processed bool
		_, err = pgx.ForEachRow(rows, []any{&ord, &data, &processed}, func() error {
			if ord < 1 || int(ord) > len(out) {
				return fmt.Errorf("load for events returned position %d of %d", ord, len(out))
			}
			out[ord-1].Processed = processed
			if data == nil {
				return nil
			}
			exe, err := decode(data)
			out[ord-1].Execution = exe
			return err
		})
		return err
	}
	if tx == nil {
		return out, s.with(ctx, op, run)
	}
	if s.closed.Load() {
		return nil, fmt.Errorf("pgstore: %s: %w", op, stead.ErrClosed)
	}
	if err := run(tx); err != nil {
		return nil, fmt.Errorf("pgstore: %s: %w", op, pgdb.Classify(err))
	}
	return out, nil
}

// IsProcessed reports whether the execution recorded eventID as processed.
func (s *Store) IsProcessed(ctx context.Context, id, eventID string) (bool, error) {
	if err := (stead.EventRef{ExecutionID: id, EventID: eventID}).Validate(); err != nil {
		return false, fmt.Errorf("pgstore: is processed: %w", err)
	}
	var ok bool
	err := s.with(ctx, "is processed", func(q querier) error {
		return q.QueryRow(ctx, s.sql.IsProcessed, id, eventID).Scan(&ok)
	})
	return ok, err
}

// List returns one page of summaries ordered by id. It reads only the listing columns, and each
// page is a keyset query (id > the cursor's id, LIMIT page+1) on an index that matches the
// filter, so a deep page costs what the first one does. Each filter shape and page size is its
// own statement text, so its cached plan fits it.
func (s *Store) List(ctx context.Context, f stead.ListFilter) (stead.Page, error) {
	q, err := listing.Prepare(f)
	if err != nil {
		return stead.Page{}, fmt.Errorf("pgstore: list: %w", err)
	}
	var sb strings.Builder
	sb.WriteString(s.sql.List)
	var args []any
	conds := 0
	where := func(cond string, arg ...any) {
		if conds == 0 {
			sb.WriteString(" WHERE ")
		} else {
			sb.WriteString(" AND ")
		}
		conds++
		args = append(args, arg...)
		sb.WriteString(strings.ReplaceAll(cond, "$n", "$"+strconv.Itoa(len(args))))
	}
	if q.DefinitionID != "" {
		where("definition_id = $n::text", q.DefinitionID)
	}
	switch len(q.Statuses) {
	case 0:
	case 1:
		where("status = $n::text", q.Statuses[0])
	default:
		where("status = ANY($n::text[])", q.Statuses)
	}
	if q.RootsOnly {
		where("parent_id IS NULL")
	}
	if q.After != "" {
		where("id > $n::text", q.After)
	}
	// The limit is part of the text, not a parameter: see pgstoresql.Limit.
	sb.WriteString(" ORDER BY id LIMIT " + strconv.Itoa(q.Limit+1))

	page := stead.Page{Items: make([]stead.Summary, 0, min(q.Limit, 64))}
	err = s.with(ctx, "list", func(qr querier) error {
		rows, err := qr.Query(ctx, sb.String(), args...)
		if err != nil {
			return err
		}
		var sm stead.Summary
		var status string
		var outcome, active, parent pgtype.Text
		var created, updated, finished pgtype.Timestamptz
		page.Items = page.Items[:0]
		_, err = pgx.ForEachRow(rows, []any{&sm.ID, &sm.DefinitionID, &status, &outcome, &active,
			&parent, &sm.Version, &created, &updated, &finished}, func() error {
			sm.Status = stead.Status(status)
			sm.Outcome, sm.ActivePath, sm.ParentID = outcome.String, active.String, parent.String
			sm.CreatedAt, sm.UpdatedAt, sm.FinishedAt = utc(created), utc(updated), utc(finished)
			page.Items = append(page.Items, sm)
			return nil
		})
		return err
	})
	if err != nil {
		return stead.Page{}, err
	}
	if len(page.Items) > q.Limit {
		page.Items = page.Items[:q.Limit]
		page.NextCursor = q.Next(page.Items[q.Limit-1].ID)
	}
	return page, nil
}

// ReadTrace returns the execution's trace steps in index order.
func (s *Store) ReadTrace(ctx context.Context, id string) ([]stead.TraceStep, error) {
	if err := check.ID("execution id", id); err != nil {
		return nil, fmt.Errorf("pgstore: read trace: %w", err)
	}
	steps := []stead.TraceStep{}
	err := s.with(ctx, "read trace", func(q querier) error {
		rows, err := q.Query(ctx, s.sql.ReadTrace, id)
		if err != nil {
			return err
		}
		var idx int64
		var entry []byte
		_, err = pgx.ForEachRow(rows, []any{&idx, &entry}, func() error {
			var st stead.TraceStep
			if err := json.Unmarshal(entry, &st); err != nil {
				return fmt.Errorf("decode trace step %d: %w", idx, err)
			}
			st.Index = idx
			steps = append(steps, st)
			return nil
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return steps, nil
}

// Timers returns the execution's armed timers ordered by path.
func (s *Store) Timers(ctx context.Context, id string) ([]stead.Timer, error) {
	if err := check.ID("execution id", id); err != nil {
		return nil, fmt.Errorf("pgstore: timers: %w", err)
	}
	return s.queryTimers(ctx, "timers", s.sql.Timers, id)
}

// PendingOutbox returns up to limit undelivered outbox entries, claimed or not, in seq order.
func (s *Store) PendingOutbox(ctx context.Context, source string, limit int) ([]stead.OutboxEntry, error) {
	n, err := checkLimit(limit)
	if err == nil {
		err = check.Text("source", source)
	}
	if err != nil {
		return nil, fmt.Errorf("pgstore: pending outbox: %w", err)
	}
	if source == "" {
		return s.queryOutbox(ctx, "pending outbox", pgstoresql.Limit(s.sql.PendingOutbox[0], n))
	}
	return s.queryOutbox(ctx, "pending outbox", pgstoresql.Limit(s.sql.PendingOutbox[1], n), source)
}

// PendingSpawns returns up to limit spawn intents, claimed or not, in seq order.
func (s *Store) PendingSpawns(ctx context.Context, parentID string, limit int) ([]stead.SpawnEntry, error) {
	n, err := checkLimit(limit)
	if err == nil {
		err = check.Text("parent id", parentID)
	}
	if err != nil {
		return nil, fmt.Errorf("pgstore: pending spawns: %w", err)
	}
	if parentID == "" {
		return s.querySpawns(ctx, "pending spawns", pgstoresql.Limit(s.sql.PendingSpawns[0], n))
	}
	return s.querySpawns(ctx, "pending spawns", pgstoresql.Limit(s.sql.PendingSpawns[1], n), parentID)
}

func checkLimit(limit int) (int, error) {
	return check.Limit("limit", limit, stead.DefaultListLimit, stead.MaxListLimit)
}

// notFound turns "no rows" into stead.ErrNotFound.
func notFound(err error, id string) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("pgstore: execution %q: %w", id, stead.ErrNotFound)
	}
	return err
}

func decode(data []byte) (*stead.Execution, error) {
	exe, err := stead.DecodeExecution(data)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	return exe, nil
}

func utc(t pgtype.Timestamptz) (z time.Time) {
	if !t.Valid {
		return z
	}
	return t.Time.UTC()
}
