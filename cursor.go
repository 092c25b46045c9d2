package stead

import (
	"encoding/base64"
	"encoding/binary"
	"hash/fnv"
	"slices"

	"github.com/steadhq/stead/internal/check"
)

// listing is a checked ListFilter: the query a backend runs, and the fingerprint that binds the
// page's cursor to the filter.
type listing struct {
	query       ListQuery
	fingerprint uint64
}

// prepareList checks f and decodes its cursor.
func prepareList(f ListFilter) (listing, error) {
	var l listing
	q := ListQuery{DefinitionID: f.DefinitionID, RootsOnly: f.RootsOnly}
	if err := check.Text("definition id", f.DefinitionID); err != nil {
		return l, err
	}
	for _, s := range f.Statuses {
		if !s.Valid() {
			return l, check.Invalidf("unknown status %q", s)
		}
	}
	if len(f.Statuses) > 0 {
		q.Statuses = slices.Clone(f.Statuses)
		slices.Sort(q.Statuses)
		q.Statuses = slices.Compact(q.Statuses)
	}
	var err error
	if q.Limit, err = check.Limit("limit", f.Limit, DefaultListLimit, MaxListLimit); err != nil {
		return l, err
	}
	l.query = q
	l.fingerprint = fingerprint(q)
	if f.Cursor != "" {
		if l.query.After, err = decodeCursor(f.Cursor, l.fingerprint); err != nil {
			return l, err
		}
	}
	return l, nil
}

// next returns the cursor of the page that follows the row with id lastID.
func (l listing) next(lastID string) string {
	b := binary.BigEndian.AppendUint64([]byte{cursorVersion}, l.fingerprint)
	return base64.RawURLEncoding.EncodeToString(append(b, lastID...))
}

const cursorVersion = 1

func fingerprint(q ListQuery) uint64 {
	h := fnv.New64a()
	h.Write([]byte(q.DefinitionID))
	h.Write([]byte{0})
	for _, s := range q.Statuses {
		h.Write([]byte(s))
		h.Write([]byte{','})
	}
	if q.RootsOnly {
		h.Write([]byte{1})
	}
	return h.Sum64()
}

func decodeCursor(cursor string, fp uint64) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || len(b) < 10 || b[0] != cursorVersion {
		return "", check.Invalidf("malformed cursor")
	}
	if binary.BigEndian.Uint64(b[1:9]) != fp {
		return "", check.Invalidf("cursor belongs to another filter")
	}
	after := string(b[9:])
	if err := check.ID("cursor", after); err != nil {
		return "", check.Invalidf("malformed cursor")
	}
	return after, nil
}
