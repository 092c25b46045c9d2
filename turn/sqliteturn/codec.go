package sqliteturn

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/steadhq/stead/turn"
)

// Values cross the boundary in these shapes:
//   - ids as their canonical text (turn.ID binds and scans itself);
//   - times as INTEGER unix microseconds, read back in UTC; a zero time.Time means "absent" and
//     is NULL;
//   - enums as their snake_case labels; an unknown label read back is ErrCorrupt, never a guess;
//   - documents as JSON text (an empty document as JSON null), stored and returned as given.

// micros binds a time as unix microseconds, the zero time as NULL. The front hands every time
// over at microsecond precision, so nothing is lost.
func micros(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}

// fromMicros reads a time column back, NULL as the zero time.
func fromMicros(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.UnixMicro(n.Int64).UTC()
}

// doc binds a document: JSON null when it is empty.
func doc(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "null"
	}
	return string(raw)
}

// readDoc returns a stored document, nil for NULL.
func readDoc(s sql.NullString) json.RawMessage {
	if !s.Valid {
		return nil
	}
	return json.RawMessage(s.String)
}

// idList binds ids as a JSON array of their text, for json_each.
func idList(ids []turn.ID) string {
	b, _ := json.Marshal(ids) // an ID always marshals
	return string(b)
}

// marshal encodes a document this package owns (a record, an outcome, an invalidation).
func marshal(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", turn.InvalidRecord("cannot encode %T: %v", v, err)
	}
	return string(b), nil
}

// unmarshal decodes a stored document this package wrote; one that does not decode is corrupt
// data, not bad input.
func unmarshal(s string, v any, what string) error {
	if err := json.Unmarshal([]byte(s), v); err != nil {
		return corrupt("%s does not decode: %v", what, err)
	}
	return nil
}

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{turn.ErrCorrupt}, args...)...)
}

func notFound(what string, id any) error { return fmt.Errorf("%w: %s %v", turn.ErrNotFound, what, id) }

func conflict(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{turn.ErrConflict}, args...)...)
}

// nullText binds "" as NULL.
func nullText(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// nullID binds the zero id as NULL.
func nullID(id turn.ID) any {
	if id.IsZero() {
		return nil
	}
	return id
}

func readRevision(v int64, field string) (turn.Revision, error) {
	if v < 0 {
		return 0, corrupt("stored %s is negative (%d)", field, v)
	}
	return turn.Revision(v), nil
}

func interactionStatus(s string) (turn.InteractionStatus, error) {
	if v := turn.InteractionStatus(s); v.Valid() {
		return v, nil
	}
	return "", corrupt("unknown interaction status %q", s)
}

func phase(s string) (turn.Phase, error) {
	if v := turn.Phase(s); v.Valid() {
		return v, nil
	}
	return "", corrupt("unknown turn phase %q", s)
}

func journalStatus(s string) (turn.JournalStatus, error) {
	if v := turn.JournalStatus(s); v.Valid() {
		return v, nil
	}
	return "", corrupt("unknown journal status %q", s)
}

func outboxStatus(s string) (turn.OutboxStatus, error) {
	if v := turn.OutboxStatus(s); v.Valid() {
		return v, nil
	}
	return "", corrupt("unknown outbox status %q", s)
}

// scanOne scans the single row of a lookup into dest: no row is ErrNotFound for what id.
func scanOne(row *sql.Row, what string, id any, dest ...any) error {
	err := row.Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound(what, id)
	}
	return classify(err)
}

// collect scans every row of a query into a fresh Row (through dest) and converts it to its
// record with conv. An error from the query itself is taken as err so that a call reads
// collect(q.QueryContext(...)).
func collect[Row, Rec any](rows *sql.Rows, err error, dest func(*Row) []any, conv func(*Row) (Rec, error)) ([]Rec, error) {
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	out := []Rec{}
	for rows.Next() {
		var r Row
		if err := rows.Scan(dest(&r)...); err != nil {
			return nil, classify(err)
		}
		rec, err := conv(&r)
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, classify(err)
	}
	return out, nil
}

// asIs is the conversion for a row that is its own record.
func asIs[Row any](r *Row) (Row, error) { return *r, nil }

// affected returns how many rows an UPDATE or INSERT changed.
func affected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, classify(err)
	}
	n, err := res.RowsAffected()
	return n, classify(err)
}
