package sqliteturn

import (
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/internal/codec"
)

// Values cross the boundary in these shapes:
//   - ids as their canonical text (turn.ID binds and scans itself);
//   - times as INTEGER unix microseconds, read back in UTC; a zero time.Time means "absent" and
//     is NULL;
//   - enums as their snake_case labels; an unknown label read back is ErrCorrupt, never a guess;
//   - documents as JSON text (an empty document as JSON null), stored and returned as given.
//
// The encodings both SQL backends share are in turn/internal/codec.

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

// scanOne scans the single row of a lookup into dest: no row is ErrNotFound for what id.
func scanOne(row *sql.Row, what string, id any, dest ...any) error {
	err := row.Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return codec.NotFound(what, id)
	}
	return classify(err)
}

// collect scans every row of a query into a fresh Row (through dest) and converts it to its
// record with conv. An error from the query itself is taken as err so that a call reads
// collect(st.X.QueryContext(...)).
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
