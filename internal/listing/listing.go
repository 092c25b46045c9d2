// Package listing turns a stead.ListFilter into the checked query every backend runs, and owns the
// opaque keyset cursor, so that all backends page alike and refuse forged cursors alike.
package listing

import (
	"encoding/base64"
	"encoding/binary"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/internal/check"
)

// Query is a validated listing request.
type Query struct {
	DefinitionID string
	Statuses     []string // sorted, distinct; empty means any
	RootsOnly    bool
	Limit        int
	After        string // keyset: only ids greater than this; empty for the first page
	fingerprint  uint64
}

// Prepare validates f and decodes its cursor.
func Prepare(f stead.ListFilter) (Query, error) {
	q := Query{DefinitionID: f.DefinitionID, RootsOnly: f.RootsOnly}
	if err := check.Text("definition id", f.DefinitionID); err != nil {
		return q, err
	}
	for _, s := range f.Statuses {
		if !s.Valid() {
			return q, check.Invalidf("unknown status %q", s)
		}
		q.Statuses = append(q.Statuses, string(s))
	}
	slices.Sort(q.Statuses)
	q.Statuses = slices.Compact(q.Statuses)
	var err error
	if q.Limit, err = check.Limit("limit", f.Limit, stead.DefaultListLimit, stead.MaxListLimit); err != nil {
		return q, err
	}
	q.fingerprint = fingerprint(q)
	if f.Cursor != "" {
		if q.After, err = decode(f.Cursor, q.fingerprint); err != nil {
			return q, err
		}
	}
	return q, nil
}

// Next returns the cursor of the page that follows the row with id lastID.
func (q Query) Next(lastID string) string {
	b := binary.BigEndian.AppendUint64([]byte{cursorVersion}, q.fingerprint)
	return base64.RawURLEncoding.EncodeToString(append(b, lastID...))
}

const cursorVersion = 1

func fingerprint(q Query) uint64 {
	h := fnv.New64a()
	h.Write([]byte(q.DefinitionID))
	h.Write([]byte{0})
	h.Write([]byte(strings.Join(q.Statuses, ",")))
	if q.RootsOnly {
		h.Write([]byte{1})
	}
	return h.Sum64()
}

func decode(cursor string, fp uint64) (string, error) {
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
