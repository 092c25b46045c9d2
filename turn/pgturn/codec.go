package pgturn

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead/turn"
)

// Values cross the boundary in these shapes:
//   - enums as their snake_case labels; an unknown label read back is ErrCorrupt, never a guess;
//   - documents as jsonb (an empty document as JSON null), returned compacted;
//   - times as timestamptz, read back in UTC; a zero time.Time means "absent" and is NULL;
//   - revisions as bigint with a CHECK (>= 0) that catches writers other than this package.

// doc returns the jsonb parameter of a document: JSON null when it is empty. Documents, like
// every parameter here, are bound in a form that needs no type information from the server
// (text, with the column or an explicit cast giving the type), so the same statements work with
// pgx's cached statements and with the unnamed ones PgBouncer mode uses.
func doc(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "null"
	}
	return string(raw)
}

// idTexts binds ids as text, for a parameter cast to uuid[] in the statement.
func idTexts(ids []turn.ID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.String()
	}
	return out
}

// readDoc turns a jsonb value read back into a document, compacted (jsonb's text form puts a
// space after every colon and comma; the meaning is the same).
func readDoc(b []byte) json.RawMessage {
	if b == nil {
		return nil
	}
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return json.RawMessage(b)
	}
	return json.RawMessage(out.Bytes())
}

// marshal encodes a document this package owns (a record, an outcome, an invalidation).
func marshal(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", turn.InvalidRecord("cannot encode %T: %v", v, err)
	}
	return string(b), nil
}

// unmarshal decodes a stored document this package wrote; a document that does not decode is
// corrupt data, not bad input.
func unmarshal(b []byte, v any, what string) error {
	if err := json.Unmarshal(b, v); err != nil {
		return corrupt("%s does not decode: %v", what, err)
	}
	return nil
}

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{turn.ErrCorrupt}, args...)...)
}

// nullTime binds the zero time as NULL.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// utc returns a time read back from PostgreSQL in UTC, or the zero time for NULL.
func utc(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// nullText binds "" as NULL.
func nullText(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func text(s *string) string {
	if s == nil {
		return ""
	}
	return *s
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
	v := turn.InteractionStatus(s)
	if !v.Valid() {
		return "", corrupt("unknown interaction status %q", s)
	}
	return v, nil
}

func phase(s string) (turn.Phase, error) {
	v := turn.Phase(s)
	if !v.Valid() {
		return "", corrupt("unknown turn phase %q", s)
	}
	return v, nil
}

func journalStatus(s string) (turn.JournalStatus, error) {
	v := turn.JournalStatus(s)
	if !v.Valid() {
		return "", corrupt("unknown journal status %q", s)
	}
	return v, nil
}

func outboxStatus(s string) (turn.OutboxStatus, error) {
	v := turn.OutboxStatus(s)
	if !v.Valid() {
		return "", corrupt("unknown outbox status %q", s)
	}
	return v, nil
}

// scanOne scans the single row of a lookup into dest: no row is ErrNotFound for what id, and a
// driver error is classified.
func scanOne(row pgx.Row, what string, id any, dest ...any) error {
	err := row.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return notFound(what, id)
	}
	return classify(err)
}

// collect scans every row of a query into a fresh Row (through dest) and converts it to its record
// with conv, mapping driver errors to the turn sentinels. An error from the query itself is taken
// as err so that a call reads collect(q.Query(...)).
func collect[Row, Rec any](rows pgx.Rows, err error, dest func(*Row) []any, conv func(*Row) (Rec, error)) ([]Rec, error) {
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
