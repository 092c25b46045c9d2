package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/steadhq/stead"
)

func decode(id string, data []byte) (*stead.Execution, error) {
	e, err := stead.DecodeExecution(data)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: execution %q: %w", id, err)
	}
	return e, nil
}

func (b *backend) Load(ctx context.Context, id string) (*stead.Execution, error) {
	var data []byte
	err := b.read(ctx, func(r *readStmts) error {
		err := r.Load.QueryRowContext(bg, id).Scan(&data) // a point read: see backend.read
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

// CursorKey reads the secret the schema was created with.
func (b *backend) CursorKey(ctx context.Context) ([]byte, error) {
	var key []byte
	err := b.read(ctx, func(r *readStmts) error {
		return r.CursorKey.QueryRowContext(ctx).Scan(&key)
	})
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: cursor key: %w", err)
	}
	return key, nil
}

// LoadForEvent reads the record and the marker in one statement.
func (b *backend) LoadForEvent(ctx context.Context, ref stead.EventRef) (*stead.Execution, bool, error) {
	var (
		data      []byte
		processed bool
	)
	err := b.read(ctx, func(r *readStmts) error {
		err := r.LoadForEvent.QueryRowContext(bg, ref.ExecutionID, ref.EventID).Scan(&data, &processed)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound(ref.ExecutionID)
		}
		return err
	})
	if err != nil {
		return nil, false, err
	}
	e, err := decode(ref.ExecutionID, data)
	if err != nil {
		return nil, false, err
	}
	return e, processed, nil
}

// LoadForEvents looks every ref up in one statement, which sees one snapshot of the database.
func (b *backend) LoadForEvents(ctx context.Context, refs []stead.EventRef) ([]stead.Loaded, error) {
	pairs := make([][2]string, len(refs))
	for i, r := range refs {
		pairs[i] = [2]string{r.ExecutionID, r.EventID}
	}
	enc, err := json.Marshal(pairs)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: load for events: %w", err)
	}
	arg := string(enc) // bound as TEXT: SQLite may read a BLOB given to json_each as JSONB
	out := make([]stead.Loaded, len(refs))
	raw := make([][]byte, len(refs))
	err = b.read(ctx, func(r *readStmts) error {
		clear(out) // from an attempt that found the file locked
		clear(raw)
		rows, err := r.LoadForEvents.QueryContext(ctx, arg)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				i         int
				data      []byte
				processed bool
			)
			if err := rows.Scan(&i, &data, &processed); err != nil {
				return err
			}
			if i < 0 || i >= len(refs) {
				return fmt.Errorf("load for events: row for ref %d of %d", i, len(refs))
			}
			raw[i], out[i].Processed = data, processed
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	for i, data := range raw {
		if data == nil {
			continue
		}
		if out[i].Execution, err = decode(refs[i].ExecutionID, data); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (b *backend) IsProcessed(ctx context.Context, ref stead.EventRef) (bool, error) {
	var ok bool
	err := b.read(ctx, func(r *readStmts) error {
		return r.IsProcessed.QueryRowContext(bg, ref.ExecutionID, ref.EventID).Scan(&ok)
	})
	return ok, err
}

// List reads only the listing columns, walking the index that matches the filter from q.After
// on (keyset paging), so a deep page costs what the first does.
func (b *backend) List(ctx context.Context, q stead.ListQuery) ([]stead.Summary, error) {
	var items []stead.Summary
	err := b.read(ctx, func(r *readStmts) error {
		st, err := b.listStmt(ctx, q)
		if err != nil {
			return err
		}
		rows, err := st.QueryContext(ctx, listArgs(q)...)
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
				attrs                      []byte
			)
			dest := []any{&sm.ID, &sm.DefinitionID, &status, &sm.Outcome, &sm.ActivePath, &sm.ParentID,
				&sm.Version, &created, &updated, &finished}
			if q.WithAttributes {
				dest = append(dest, &attrs)
			}
			if err := rows.Scan(dest...); err != nil {
				return err
			}
			if q.WithAttributes {
				if sm.Attributes, err = decodeAttrs(attrs); err != nil {
					return fmt.Errorf("attributes of %q: %w", sm.ID, err)
				}
			}
			sm.Status = stead.Status(status)
			sm.CreatedAt, sm.UpdatedAt, sm.FinishedAt = fromMicros(created), fromMicros(updated), fromMicros(finished)
			items = append(items, sm)
		}
		return rows.Err()
	})
	return items, err
}

// FiltersAttributes implements stead.AttributeBackend.
func (b *backend) FiltersAttributes() bool { return true }

// decodeAttrs reads the JSON array of [key, kind, s, n] rows a listing with attributes returns.
func decodeAttrs(raw []byte) (map[string]stead.AttrValue, error) {
	var rows [][4]json.RawMessage
	if err := json.Unmarshal(raw, &rows); err != nil || len(rows) == 0 {
		return nil, err
	}
	out := make(map[string]stead.AttrValue, len(rows))
	for _, r := range rows {
		var (
			key  string
			kind stead.AttrKind
			s    *string
			n    *int64
		)
		for i, dst := range []any{&key, &kind, &s, &n} {
			if err := json.Unmarshal(r[i], dst); err != nil {
				return nil, err
			}
		}
		var sv string
		var nv int64
		if s != nil {
			sv = *s
		}
		if n != nil {
			nv = *n
		}
		v, err := stead.AttrFromColumns(kind, sv, nv)
		if err != nil {
			return nil, err
		}
		out[key] = v
	}
	return out, nil
}

// Count implements stead.Counter with List's filter under a GROUP BY.
func (b *backend) Count(ctx context.Context, q stead.ListQuery) ([]stead.CountRow, error) {
	var out []stead.CountRow
	err := b.read(ctx, func(r *readStmts) error {
		sh := shapeOf(q)
		sh.count, sh.attrs = true, false
		st, err := b.shapeStmt(ctx, sh)
		if err != nil {
			return err
		}
		args := listArgs(q)
		rows, err := st.QueryContext(ctx, args[1:len(args)-1]...) // no cursor, no limit
		if err != nil {
			return err
		}
		defer rows.Close()
		out = out[:0]
		for rows.Next() {
			var c stead.CountRow
			var status string
			if err := rows.Scan(&c.DefinitionID, &status, &c.N); err != nil {
				return err
			}
			c.Status = stead.Status(status)
			out = append(out, c)
		}
		return rows.Err()
	})
	return out, err
}

// listStmt returns the prepared statement for the shape of q (which filters are set, how many
// statuses), preparing it on first use. An application uses few shapes, so few are ever made.
func (b *backend) listStmt(ctx context.Context, q stead.ListQuery) (*sql.Stmt, error) {
	return b.shapeStmt(ctx, shapeOf(q))
}

// shapeStmt returns the prepared statement of a shape, preparing it on first use.
func (b *backend) shapeStmt(ctx context.Context, sh listShape) (*sql.Stmt, error) {
	b.listMu.Lock()
	defer b.listMu.Unlock()
	if b.lists == nil {
		return nil, fmt.Errorf("sqlitestore: %w", stead.ErrClosed)
	}
	if st := b.lists[sh]; st != nil {
		return st, nil
	}
	st, err := b.db.R.PrepareContext(ctx, listSQL(sh))
	if err != nil {
		return nil, err
	}
	b.lists[sh] = st
	return st, nil
}

func (b *backend) ReadTrace(ctx context.Context, id string) ([]stead.TraceStep, error) {
	var out []stead.TraceStep
	err := b.read(ctx, func(r *readStmts) error {
		rows, err := r.ReadTrace.QueryContext(ctx, id)
		if err != nil {
			return err
		}
		defer rows.Close()
		out = out[:0]
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

func (b *backend) Timers(ctx context.Context, id string) ([]stead.Timer, error) {
	var out []stead.Timer
	err := b.read(ctx, func(r *readStmts) error {
		rows, err := r.Timers.QueryContext(ctx, id)
		if err != nil {
			return err
		}
		defer rows.Close()
		out = out[:0]
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

func (b *backend) PendingOutbox(ctx context.Context, source string, limit int) ([]stead.OutboxEntry, error) {
	var out []stead.OutboxEntry
	err := b.read(ctx, func(r *readStmts) error {
		var rows *sql.Rows
		var err error
		if source == "" {
			rows, err = r.PendingOutbox.QueryContext(ctx, limit)
		} else {
			rows, err = r.PendingOutboxBySource.QueryContext(ctx, source, limit)
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
	var out []stead.OutboxEntry
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

func (b *backend) PendingSpawns(ctx context.Context, parentID string, limit int) ([]stead.SpawnEntry, error) {
	var out []stead.SpawnEntry
	err := b.read(ctx, func(r *readStmts) error {
		var rows *sql.Rows
		var err error
		if parentID == "" {
			rows, err = r.PendingSpawns.QueryContext(ctx, limit)
		} else {
			rows, err = r.PendingSpawnsByParent.QueryContext(ctx, parentID, limit)
		}
		if err != nil {
			return err
		}
		out, err = scanSpawns(rows)
		return err
	})
	return out, err
}

// scanSpawns reads (seq, parent_id, child_id, root_path, context, trace) rows and closes them.
func scanSpawns(rows *sql.Rows) ([]stead.SpawnEntry, error) {
	defer rows.Close()
	var out []stead.SpawnEntry
	for rows.Next() {
		var e stead.SpawnEntry
		if err := rows.Scan(&e.Seq, &e.ParentID, &e.ChildID, &e.RootPath, &e.Context, &e.Trace); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// shapeOf is the listShape of q.
func shapeOf(q stead.ListQuery) listShape {
	sh := listShape{definition: q.DefinitionID != "", statuses: len(q.Statuses), rootsOnly: q.RootsOnly,
		prefix: q.IDPrefix != "", prefixEnd: q.IDPrefixEnd != ""}
	for i, t := range listBounds(q) {
		sh.bounds[i] = !t.IsZero()
	}
	sh.attrParts = attrParts(q.Attributes)
	sh.attrs = q.WithAttributes
	return sh
}

func listBounds(q stead.ListQuery) [6]time.Time {
	return [6]time.Time{q.Created.From, q.Created.Before, q.Updated.From, q.Updated.Before, q.Finished.From, q.Finished.Before}
}

// listArgs are the arguments of listSQL(shapeOf(q)), in the order of its parts.
func listArgs(q stead.ListQuery) []any {
	args := make([]any, 0, 12+len(q.Statuses))
	args = append(args, q.After)
	if q.DefinitionID != "" {
		args = append(args, q.DefinitionID)
	}
	for _, v := range q.Statuses {
		args = append(args, string(v))
	}
	if q.IDPrefix != "" {
		args = append(args, q.IDPrefix)
	}
	if q.IDPrefixEnd != "" {
		args = append(args, q.IDPrefixEnd)
	}
	for _, t := range listBounds(q) {
		if !t.IsZero() {
			args = append(args, t.UnixMicro())
		}
	}
	for _, f := range q.Attributes {
		args = append(args, f.Key)
		kind := f.Values[0].Kind()
		if kind != stead.AttrKindString {
			args = append(args, int(kind))
		}
		for _, v := range f.Values {
			if kind == stead.AttrKindString {
				args = append(args, v.Str())
			} else {
				args = append(args, v.Num())
			}
		}
	}
	return append(args, q.Limit)
}

// attrParts is the text of the attribute conditions of a listing: sqlListAttrStr or
// sqlListAttrNum for the first, the probes for the others, each followed by the comparison or the
// set of as many parameters as values.
func attrParts(fs []stead.AttrFilter) string {
	var b strings.Builder
	for i, f := range fs {
		str := f.Values[0].Kind() == stead.AttrKindString
		switch {
		case i == 0 && str:
			b.WriteString(sqlListAttrStr)
		case i == 0:
			b.WriteString(sqlListAttrNum)
		case str:
			b.WriteString(sqlListAttrStrProbe)
		default:
			b.WriteString(sqlListAttrNumProbe)
		}
		if f.Op == stead.AttrIn {
			b.WriteString(` IN (?` + strings.Repeat(`, ?`, len(f.Values)-1) + `))`)
			continue
		}
		b.WriteString(` ` + string(f.Op) + ` ?)`)
	}
	return b.String()
}
