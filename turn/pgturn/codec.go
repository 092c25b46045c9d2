package pgturn

import (
	"bytes"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/internal/codec"
)

// Values cross the boundary in these shapes:
//   - enums as their snake_case labels; an unknown label read back is ErrCorrupt, never a guess;
//   - documents as jsonb (an empty document as JSON null), returned compacted;
//   - times as timestamptz, read back in UTC; a zero time.Time means "absent" and is NULL;
//   - revisions as bigint with a CHECK (>= 0) that catches writers other than this package.
//
// Every parameter is bound in a form that needs no type information from the server (text, with
// the column or an explicit cast giving the type; documents through codec.Doc), so the same
// statements work with pgx's cached statements and with the unnamed ones PgBouncer mode uses. The
// encodings both SQL backends share are in turn/internal/codec.

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

func text(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// scanOne scans the single row of a lookup into dest: no row is ErrNotFound for what id, and a
// driver error is classified.
func scanOne(row pgx.Row, what string, id any, dest ...any) error {
	err := row.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return codec.NotFound(what, id)
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
