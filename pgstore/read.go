package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/internal/check"
	"github.com/steadhq/stead/pgdb"
)

// Load implements stead.Backend.
func (b *Backend) Load(ctx context.Context, id string) (*stead.Execution, error) {
	var data []byte
	err := b.with(ctx, "load", func(q querier) error {
		return q.QueryRow(ctx, b.st.Load, id).Scan(&data)
	})
	if err != nil {
		return nil, notFound(err, id)
	}
	return decode(data)
}

// LoadForEvent implements stead.Backend: one query, through stead_load_for_event.
func (b *Backend) LoadForEvent(ctx context.Context, ref stead.EventRef) (*stead.Execution, bool, error) {
	var data []byte
	var processed bool
	err := b.with(ctx, "load for event", func(q querier) error {
		return q.QueryRow(ctx, b.st.LoadForEvent, ref.ExecutionID, ref.EventID).Scan(&data, &processed)
	})
	if err != nil {
		return nil, false, notFound(err, ref.ExecutionID)
	}
	exe, err := decode(data)
	if err != nil {
		return nil, false, err
	}
	return exe, processed, nil
}

// LoadForEvents implements stead.Backend: one query, through stead_load_for_events.
func (b *Backend) LoadForEvents(ctx context.Context, refs []stead.EventRef) ([]stead.Loaded, error) {
	var out []stead.Loaded
	err := b.with(ctx, "load for events", func(q querier) error {
		var err error
		out, err = b.loadForEvents(ctx, q, refs)
		return err
	})
	return out, err
}

// LoadForEventsTx is the Store's LoadForEvents on the caller's transaction, so that worker/pgtx
// can load, step and commit (CommitBatchTx) in one transaction. Its arguments are checked as the
// Store checks them. The caller commits or rolls back tx; an error from the database has aborted
// it.
func (b *Backend) LoadForEventsTx(ctx context.Context, tx pgx.Tx, refs []stead.EventRef) ([]stead.Loaded, error) {
	const op = "load for events"
	if tx == nil {
		return nil, check.Invalidf("pgstore: %s: transaction is nil", op)
	}
	if err := stead.CheckRefs(refs); err != nil {
		return nil, fmt.Errorf("pgstore: %s: %w", op, err)
	}
	if err := b.enter(op); err != nil {
		return nil, err
	}
	if len(refs) == 0 {
		return []stead.Loaded{}, nil
	}
	var out []stead.Loaded
	err := onTx(op, tx, func(q querier) error {
		var err error
		out, err = b.loadForEvents(ctx, q, refs)
		return err
	})
	return out, err
}

func (b *Backend) loadForEvents(ctx context.Context, q querier, refs []stead.EventRef) ([]stead.Loaded, error) {
	ids := make([]string, len(refs))
	events := make([]string, len(refs))
	for i, r := range refs {
		ids[i], events[i] = r.ExecutionID, r.EventID
	}
	// A worker asks for several events of one execution (a chain): its record is read, sent and
	// decoded once, with its first ref (scanLoaded).
	firstOf := firstRefs(refs)
	sql, args := b.st.LoadForEvents, []any{ids, events}
	if firstOf != nil {
		first := make([]bool, len(refs))
		for i, f := range firstOf {
			first[i] = f == i
		}
		sql, args = b.st.LoadForEventsOnce, []any{ids, events, first}
	}
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return scanLoaded(rows, len(refs), firstOf)
}

// LoadForEventsQuery returns the statement LoadForEventsTx sends, with SQL expressions in place
// of its parameters: ids and events (text[]) are the refs' executions and events, and first
// (boolean[]) marks the first ref of each execution in their order, the only one whose
// execution's record the statement reads. It exists for worker/pgtx, which loads what a claim
// took in the statement after the claim, in the same round trip, from values the claim's
// statement left in the transaction; ScanLoaded reads its rows.
func (b *Backend) LoadForEventsQuery(ids, events, first string) string {
	return `SELECT r_ord, r_data, r_processed FROM ` + pgdb.Qualifier(b.schema) +
		`stead_load_for_events_once(` + ids + `, ` + events + `, ` + first + `)`
}

// ScanLoaded reads and closes the rows of a LoadForEventsQuery statement whose arrays held refs,
// in that order: it returns what LoadForEventsTx returns for refs. refs are checked as the
// Store checks them; a statement that did not answer for every ref is an error.
func (b *Backend) ScanLoaded(rows pgx.Rows, refs []stead.EventRef) ([]stead.Loaded, error) {
	const op = "load for events"
	if err := stead.CheckRefs(refs); err != nil {
		rows.Close()
		return nil, fmt.Errorf("pgstore: %s: %w", op, err)
	}
	if err := b.enter(op); err != nil {
		rows.Close()
		return nil, err
	}
	out, err := scanLoaded(rows, len(refs), firstRefs(refs))
	if err != nil {
		return nil, fmt.Errorf("pgstore: %s: %w", op, pgdb.Classify(err))
	}
	return out, nil
}

// scanLoaded reads the rows of a load of n refs, one per ref, in ref order, the first ref of an
// id first. firstOf (firstRefs) says which refs repeat an execution: its record came with its
// first ref only, and every later ref of it gets a deep copy (Clone costs a fraction of decoding
// the JSON), so that each result stays the caller's own. The rows come from one statement, so
// every ref of an execution sees one version of it.
func scanLoaded(rows pgx.Rows, n int, firstOf []int) ([]stead.Loaded, error) {
	out := make([]stead.Loaded, n)
	var ord int64
	var data []byte
	var processed bool
	seen, err := pgx.ForEachRow(rows, []any{&ord, &data, &processed}, func() error {
		if ord < 1 || int(ord) > len(out) {
			return fmt.Errorf("load for events returned position %d of %d", ord, len(out))
		}
		i := int(ord - 1)
		out[i].Processed = processed
		if firstOf != nil && firstOf[i] != i {
			// The first ref's row came before this one.
			if earlier := out[firstOf[i]].Execution; earlier != nil {
				out[i].Execution = earlier.Clone()
			}
			return nil
		}
		if data == nil {
			return nil
		}
		exe, err := decode(data)
		if err != nil {
			return err
		}
		out[i].Execution = exe
		return nil
	})
	if err != nil {
		return nil, err
	}
	if int(seen.RowsAffected()) != n {
		// A ref without its row would read as an execution that does not exist.
		return nil, fmt.Errorf("load for events returned %d rows for %d refs", seen.RowsAffected(), n)
	}
	return out, nil
}

// firstRefs returns, for each ref, the index of the first ref of its execution, or nil when no
// execution repeats (the refs then go to the statement without the marks, as they always did).
func firstRefs(refs []stead.EventRef) []int {
	if len(refs) < 2 {
		return nil
	}
	at := make(map[string]int, len(refs))
	firstOf := make([]int, len(refs))
	repeats := false
	for i, r := range refs {
		if j, ok := at[r.ExecutionID]; ok {
			firstOf[i], repeats = j, true
			continue
		}
		at[r.ExecutionID], firstOf[i] = i, i
	}
	if !repeats {
		return nil
	}
	return firstOf
}

// IsProcessed implements stead.Backend.
func (b *Backend) IsProcessed(ctx context.Context, ref stead.EventRef) (bool, error) {
	var ok bool
	err := b.with(ctx, "is processed", func(q querier) error {
		return q.QueryRow(ctx, b.st.IsProcessed, ref.ExecutionID, ref.EventID).Scan(&ok)
	})
	return ok, err
}

// CursorKey reads the secret the schema was created with.
func (b *Backend) CursorKey(ctx context.Context) ([]byte, error) {
	var key []byte
	err := b.with(ctx, "cursor key", func(q querier) error {
		return q.QueryRow(ctx, b.st.CursorKey).Scan(&key)
	})
	return key, err
}

// List implements stead.Backend. It reads only the listing columns, and each page is a keyset
// query (id > the cursor's id) on an index that matches the filter, so a deep page costs what
// the first one does.
func (b *Backend) List(ctx context.Context, lq stead.ListQuery) ([]stead.Summary, error) {
	list := b.st.List
	if lq.WithAttributes {
		list = b.st.ListWithAttrs
	}
	sql, args := listSQL(list, &b.st, lq)
	items := make([]stead.Summary, 0, min(lq.Limit, 64))
	err := b.with(ctx, "list", func(q querier) error {
		rows, err := q.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		var sm stead.Summary
		var status string
		var outcome, active, parent pgtype.Text
		var created, updated, finished pgtype.Timestamptz
		var keys []string
		var kinds []int16
		var ss []pgtype.Text
		var ns []pgtype.Int8
		dest := []any{&sm.ID, &sm.DefinitionID, &status, &outcome, &active,
			&parent, &sm.Version, &created, &updated, &finished}
		if lq.WithAttributes {
			dest = append(dest, &keys, &kinds, &ss, &ns)
		}
		items = items[:0]
		_, err = pgx.ForEachRow(rows, dest, func() error {
			sm.Status = stead.Status(status)
			sm.Outcome, sm.ActivePath, sm.ParentID = outcome.String, active.String, parent.String
			sm.CreatedAt, sm.UpdatedAt, sm.FinishedAt = created.Time, updated.Time, finished.Time
			sm.Attributes = nil
			if len(keys) > 0 {
				if len(kinds) != len(keys) || len(ss) != len(keys) || len(ns) != len(keys) {
					return fmt.Errorf("attributes of %q: %d keys, %d kinds, %d strings, %d numbers", sm.ID, len(keys), len(kinds), len(ss), len(ns))
				}
				sm.Attributes = make(map[string]stead.AttrValue, len(keys))
				for i, k := range keys {
					v, err := stead.AttrFromColumns(stead.AttrKind(kinds[i]), ss[i].String, ns[i].Int64)
					if err != nil {
						return fmt.Errorf("attribute %q of %q: %w", k, sm.ID, err)
					}
					sm.Attributes[k] = v
				}
			}
			items = append(items, sm)
			return nil
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return items, nil
}

// FiltersAttributes implements stead.AttributeBackend.
func (b *Backend) FiltersAttributes() bool { return true }

// Count implements stead.Counter: List's filter under a GROUP BY.
func (b *Backend) Count(ctx context.Context, lq stead.ListQuery) ([]stead.CountRow, error) {
	sql, args := listSQL(b.st.Count, &b.st, lq)
	var out []stead.CountRow
	err := b.with(ctx, "count", func(q querier) error {
		rows, err := q.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		var c stead.CountRow
		var status string
		out = out[:0]
		_, err = pgx.ForEachRow(rows, []any{&c.DefinitionID, &status, &c.N}, func() error {
			c.Status = stead.Status(status)
			out = append(out, c)
			return nil
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ReadTrace implements stead.Backend.
func (b *Backend) ReadTrace(ctx context.Context, id string) ([]stead.TraceStep, error) {
	var steps []stead.TraceStep
	err := b.with(ctx, "read trace", func(q querier) error {
		rows, err := q.Query(ctx, b.st.ReadTrace, id)
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

// Timers implements stead.Backend.
func (b *Backend) Timers(ctx context.Context, id string) ([]stead.Timer, error) {
	return b.queryTimers(ctx, "timers", b.st.Timers, id)
}

// PendingOutbox implements stead.Backend.
func (b *Backend) PendingOutbox(ctx context.Context, source string, limit int) ([]stead.OutboxEntry, error) {
	if source == "" {
		return b.queryOutbox(ctx, "pending outbox", withLimit(b.st.PendingOutbox, limit))
	}
	return b.queryOutbox(ctx, "pending outbox", withLimit(b.st.PendingOutboxOfSource, limit), source)
}

// PendingSpawns implements stead.Backend.
func (b *Backend) PendingSpawns(ctx context.Context, parentID string, limit int) ([]stead.SpawnEntry, error) {
	if parentID == "" {
		return b.querySpawns(ctx, "pending spawns", withLimit(b.st.PendingSpawns, limit))
	}
	return b.querySpawns(ctx, "pending spawns", withLimit(b.st.PendingSpawnsOfParent, limit), parentID)
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
