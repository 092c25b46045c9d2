package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/internal/check"
	"github.com/steadhq/stead/internal/listing"
)

func decode(id string, data []byte) (*stead.Execution, error) {
	e, err := stead.DecodeExecution(data)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: execution %q: %w", id, err)
	}
	return e, nil
}

// Load implements stead.Reader.
func (s *Store) Load(ctx context.Context, id string) (*stead.Execution, error) {
	if err := check.ID("execution id", id); err != nil {
		return nil, err
	}
	var data []byte
	err := s.read(ctx, func(r *readStmts) error {
		err := r.load.QueryRowContext(bg, id).Scan(&data) // a point read: see Store.read
		if errors.Is(err, sql.ErrNoRows) {
			return notFound(id)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return decode(id, data)
}

// LoadForEvent implements stead.Reader: one statement reads the record and the marker.
func (s *Store) LoadForEvent(ctx context.Context, id, eventID string) (*stead.Execution, bool, error) {
	if err := (stead.EventRef{ExecutionID: id, EventID: eventID}).Validate(); err != nil {
		return nil, false, err
	}
	var (
		data      []byte
		processed bool
	)
	err := s.read(ctx, func(r *readStmts) error {
		err := r.loadForEvent.QueryRowContext(bg, id, eventID).Scan(&data, &processed)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound(id)
		}
		return err
	})
	if err != nil {
		return nil, false, err
	}
	e, err := decode(id, data)
	if err != nil {
		return nil, false, err
	}
	return e, processed, nil
}

// LoadForEvents implements stead.Reader. The lookups run in one read transaction, so they see one
// snapshot of the database.
func (s *Store) LoadForEvents(ctx context.Context, refs []stead.EventRef) ([]stead.Loaded, error) {
	if len(refs) > stead.MaxBatch {
		return nil, check.Invalidf("%d refs, more than %d", len(refs), stead.MaxBatch)
	}
	for i, r := range refs {
		if err := r.Validate(); err != nil {
			return nil, fmt.Errorf("ref %d: %w", i, err)
		}
	}
	out := make([]stead.Loaded, len(refs))
	if len(refs) == 0 {
		return out, s.enter(ctx)
	}
	raw := make([][]byte, len(refs))
	err := s.read(ctx, func(r *readStmts) error {
		st := r.loadForEvent
		if !s.wr.memory { // memory: the reads hold the only connection, nothing can interleave
			tx, err := s.db.R.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
			if err != nil {
				return err
			}
			defer tx.Rollback()
			st = tx.StmtContext(ctx, st)
		}
		for i, r := range refs {
			raw[i] = nil
			out[i] = stead.Loaded{}
			err := st.QueryRowContext(ctx, r.ExecutionID, r.EventID).Scan(&raw[i], &out[i].Processed)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i, b := range raw {
		if b == nil {
			continue
		}
		if out[i].Execution, err = decode(refs[i].ExecutionID, b); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// IsProcessed implements stead.Reader.
func (s *Store) IsProcessed(ctx context.Context, id, eventID string) (bool, error) {
	if err := (stead.EventRef{ExecutionID: id, EventID: eventID}).Validate(); err != nil {
		return false, err
	}
	var ok bool
	err := s.read(ctx, func(r *readStmts) error { return r.isProcessed.QueryRowContext(bg, id, eventID).Scan(&ok) })
	return ok, err
}

// List implements stead.Reader. It reads only the listing columns, walking the index that matches
// the filter from the cursor's id on (keyset paging), so a deep page costs what the first does.
func (s *Store) List(ctx context.Context, f stead.ListFilter) (stead.Page, error) {
	q, err := listing.Prepare(f)
	if err != nil {
		return stead.Page{}, err
	}
	var items []stead.Summary
	err = s.read(ctx, func(r *readStmts) error {
		st, err := s.listStmt(ctx, q)
		if err != nil {
			return err
		}
		args := make([]any, 0, 3+len(q.Statuses))
		args = append(args, q.After)
		if q.DefinitionID != "" {
			args = append(args, q.DefinitionID)
		}
		for _, v := range q.Statuses {
			args = append(args, v)
		}
		args = append(args, q.Limit+1)
		rows, err := st.QueryContext(ctx, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		items = items[:0]
		for rows.Next() {
			var (
				sm                         stead.Summary
				status                     string
				created, updated, finished sql.NullInt64
			)
			if err := rows.Scan(&sm.ID, &sm.DefinitionID, &status, &sm.Outcome, &sm.ActivePath, &sm.ParentID,
				&sm.Version, &created, &updated, &finished); err != nil {
				return err
			}
			sm.Status = stead.Status(status)
			sm.CreatedAt, sm.UpdatedAt, sm.FinishedAt = fromMicros(created), fromMicros(updated), fromMicros(finished)
			items = append(items, sm)
		}
		return rows.Err()
	})
	if err != nil {
		return stead.Page{}, err
	}
	var p stead.Page
	if len(items) > q.Limit {
		items = items[:q.Limit]
		p.NextCursor = q.Next(items[len(items)-1].ID)
	}
	p.Items = items
	if p.Items == nil {
		p.Items = []stead.Summary{}
	}
	return p, nil
}

// listStmt returns the prepared statement for the shape of q (which filters are set, how many
// statuses), preparing it on first use. There are at most 2*8*2 shapes.
func (s *Store) listStmt(ctx context.Context, q listing.Query) (*sql.Stmt, error) {
	key := fmt.Sprintf("%t/%d/%t", q.DefinitionID != "", len(q.Statuses), q.RootsOnly)
	s.listMu.Lock()
	defer s.listMu.Unlock()
	if s.lists == nil {
		return nil, fmt.Errorf("sqlitestore: %w", stead.ErrClosed)
	}
	if st := s.lists[key]; st != nil {
		return st, nil
	}
	var b strings.Builder
	b.WriteString(`SELECT id, definition_id, status, outcome, active_path, parent_id, version,
		created_at, updated_at, finished_at FROM executions WHERE id > ?`)
	if q.DefinitionID != "" {
		b.WriteString(` AND definition_id = ?`)
	}
	if n := len(q.Statuses); n > 0 {
		b.WriteString(` AND status IN (?` + strings.Repeat(`, ?`, n-1) + `)`)
	}
	if q.RootsOnly {
		b.WriteString(` AND parent_id = ''`)
	}
	b.WriteString(` ORDER BY id LIMIT ?`)
	var p preparer = s.db.R
	if s.wr.memory {
		p = s.wr.conn // held by this read
	}
	st, err := p.PrepareContext(ctx, b.String())
	if err != nil {
		return nil, err
	}
	s.lists[key] = st
	return st, nil
}

// ReadTrace implements stead.Reader.
func (s *Store) ReadTrace(ctx context.Context, id string) ([]stead.TraceStep, error) {
	if err := check.ID("execution id", id); err != nil {
		return nil, err
	}
	var out []stead.TraceStep
	err := s.read(ctx, func(r *readStmts) error {
		rows, err := r.readTrace.QueryContext(ctx, id)
		if err != nil {
			return err
		}
		defer rows.Close()
		out = []stead.TraceStep{}
		for rows.Next() {
			var (
				idx int64
				raw []byte
				t   stead.TraceStep
			)
			if err := rows.Scan(&idx, &raw); err != nil {
				return err
			}
			if err := json.Unmarshal(raw, &t); err != nil {
				return fmt.Errorf("trace step %d of %q: %w", idx, id, err)
			}
			t.Index = idx
			out = append(out, t)
		}
		return rows.Err()
	})
	return out, err
}

// Timers implements stead.Reader.
func (s *Store) Timers(ctx context.Context, id string) ([]stead.Timer, error) {
	if err := check.ID("execution id", id); err != nil {
		return nil, err
	}
	var out []stead.Timer
	err := s.read(ctx, func(r *readStmts) error {
		rows, err := r.timers.QueryContext(ctx, id)
		if err != nil {
			return err
		}
		defer rows.Close()
		out = []stead.Timer{}
		for rows.Next() {
			t := stead.Timer{ExecutionID: id}
			var at sql.NullInt64
			if err := rows.Scan(&t.Path, &at); err != nil {
				return err
			}
			t.FireAt = fromMicros(at)
			out = append(out, t)
		}
		return rows.Err()
	})
	return out, err
}

func checkScan(field, id string, limit int) (int, error) {
	if err := check.Text(field, id); err != nil {
		return 0, err
	}
	return check.Limit("limit", limit, stead.DefaultListLimit, stead.MaxListLimit)
}

// PendingOutbox implements stead.Reader.
func (s *Store) PendingOutbox(ctx context.Context, source string, limit int) ([]stead.OutboxEntry, error) {
	limit, err := checkScan("source", source, limit)
	if err != nil {
		return nil, err
	}
	var out []stead.OutboxEntry
	err = s.read(ctx, func(r *readStmts) error {
		var rows *sql.Rows
		var err error
		if source == "" {
			rows, err = r.outboxAll.QueryContext(ctx, limit)
		} else {
			rows, err = r.outboxBySource.QueryContext(ctx, source, limit)
		}
		if err != nil {
			return err
		}
		out, err = scanOutbox(rows)
		return err
	})
	return out, err
}

// scanOutbox reads (seq, source, target, event) rows and closes them.
func scanOutbox(rows *sql.Rows) ([]stead.OutboxEntry, error) {
	defer rows.Close()
	out := []stead.OutboxEntry{}
	for rows.Next() {
		var (
			e   stead.OutboxEntry
			raw []byte
		)
		if err := rows.Scan(&e.Seq, &e.Source, &e.Target, &raw); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(raw, &e.Event); err != nil {
			return nil, fmt.Errorf("outbox entry %d: %w", e.Seq, err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// PendingSpawns implements stead.Reader.
func (s *Store) PendingSpawns(ctx context.Context, parentID string, limit int) ([]stead.SpawnEntry, error) {
	limit, err := checkScan("parent id", parentID, limit)
	if err != nil {
		return nil, err
	}
	var out []stead.SpawnEntry
	err = s.read(ctx, func(r *readStmts) error {
		var rows *sql.Rows
		var err error
		if parentID == "" {
			rows, err = r.spawnsAll.QueryContext(ctx, limit)
		} else {
			rows, err = r.spawnsByParent.QueryContext(ctx, parentID, limit)
		}
		if err != nil {
			return err
		}
		out, err = scanSpawns(rows)
		return err
	})
	return out, err
}

// scanSpawns reads (seq, parent_id, child_id, root_path, context) rows and closes them.
func scanSpawns(rows *sql.Rows) ([]stead.SpawnEntry, error) {
	defer rows.Close()
	out := []stead.SpawnEntry{}
	for rows.Next() {
		var e stead.SpawnEntry
		if err := rows.Scan(&e.Seq, &e.ParentID, &e.ChildID, &e.RootPath, &e.Context); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}
