package stead

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/steadhq/stead/internal/check"
)

// A listing cursor is the id of the last row of a page and a keyed MAC over that id and the
// filter, under the store's own secret (Backend.CursorKey): a cursor the store did not produce
// for this filter — truncated, edited, built by hand or taken from another filter or another
// database — fails the MAC and is ErrInvalid, so no caller can steer a listing with one.
//
//	cursor = base64url(version | id | HMAC-SHA256(key, filter | id)[:macLen])

const (
	cursorVersion = 2
	macLen        = 16 // 128 bits: forging one takes 2^128 tries on average
	// MinCursorKey is the shortest secret a Backend may give for cursors.
	MinCursorKey = 32
)

// listing is a checked ListFilter: the query a backend runs, and the filter's canonical bytes,
// which every cursor of that filter is bound to.
type listing struct {
	query  ListQuery
	filter []byte
}

// prepareList checks f; the cursor is opened later, with the store's key (open).
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
	if err := check.Text("id prefix", f.IDPrefix); err != nil {
		return l, err
	}
	q.IDPrefix, q.IDPrefixEnd = f.IDPrefix, PrefixEnd(f.IDPrefix)
	var err error
	for _, w := range [...]struct {
		name string
		in   TimeRange
		out  *TimeRange
	}{{"created", f.Created, &q.Created}, {"updated", f.Updated, &q.Updated}, {"finished", f.Finished, &q.Finished}} {
		if *w.out, err = checkRange(w.name, w.in); err != nil {
			return l, err
		}
	}
	if q.Attributes, err = checkAttrFilters(f.Attributes); err != nil {
		return l, err
	}
	if q.Attributes, err = checkAttrFilters(f.Attributes); err != nil {
		return l, err
	}
	if q.Limit, err = check.Limit("limit", f.Limit, DefaultListLimit, MaxListLimit); err != nil {
		return l, err
	}
	if len(f.Cursor) > maxCursorLen {
		return l, check.Invalidf("cursor of %d bytes was not produced by this store", len(f.Cursor))
	}
	l.query, l.filter = q, canonicalFilter(q)
	return l, nil
}

// maxCursorLen bounds what a cursor can be before decoding: an id of MaxIDLen bytes, the version
// and the MAC, in base64.
var maxCursorLen = base64.RawURLEncoding.EncodedLen(1 + MaxIDLen + macLen)

// checkRange checks a listing window and returns it normalised like every stored time.
func checkRange(name string, r TimeRange) (TimeRange, error) {
	var err error
	if r.From, err = check.Time(name+" from", r.From); err != nil {
		return r, err
	}
	if r.Before, err = check.Time(name+" before", r.Before); err != nil {
		return r, err
	}
	if !r.From.IsZero() && !r.Before.IsZero() && !r.From.Before(r.Before) {
		return r, check.Invalidf("%s window is empty: from %s is not before %s", name,
			r.From.Format(time.RFC3339Nano), r.Before.Format(time.RFC3339Nano))
	}
	return r, nil
}

// canonicalFilter encodes every field of q that selects rows, each length-prefixed, so that two
// filters have the same bytes only if they select the same rows. The id prefix and the time
// windows follow a marker byte only when one of them is set, so that a filter without them has
// the bytes it had before they existed and cursors issued for it stay valid across an upgrade;
// the attribute conditions follow a marker of their own in the same way, after the windows'
// section when there is one.
func canonicalFilter(q ListQuery) []byte {
	b := binary.AppendUvarint(nil, uint64(len(q.DefinitionID)))
	b = append(b, q.DefinitionID...)
	b = binary.AppendUvarint(b, uint64(len(q.Statuses)))
	for _, s := range q.Statuses {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	if q.RootsOnly {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	if q.IDPrefix != "" || !q.Created.IsZero() || !q.Updated.IsZero() || !q.Finished.IsZero() {
		b = append(b, 'w')
		b = binary.AppendUvarint(b, uint64(len(q.IDPrefix)))
		b = append(b, q.IDPrefix...)
		for _, r := range [...]TimeRange{q.Created, q.Updated, q.Finished} {
			b = appendBound(b, r.From)
			b = appendBound(b, r.Before)
		}
	}
	if len(q.Attributes) == 0 {
		return b
	}
	// 'a', then per condition its key, op and values, each value its kind and then a string
	// length-prefixed or the number; every variable part is length-prefixed.
	b = append(b, 'a')
	b = binary.AppendUvarint(b, uint64(len(q.Attributes)))
	for _, f := range q.Attributes {
		b = binary.AppendUvarint(b, uint64(len(f.Key)))
		b = append(b, f.Key...)
		b = binary.AppendUvarint(b, uint64(len(f.Op)))
		b = append(b, f.Op...)
		b = binary.AppendUvarint(b, uint64(len(f.Values)))
		for _, v := range f.Values {
			b = append(b, byte(v.kind))
			if v.kind == AttrKindString {
				b = binary.AppendUvarint(b, uint64(len(v.s)))
				b = append(b, v.s...)
			} else {
				b = binary.AppendVarint(b, v.n)
			}
		}
	}
	return b
}

// appendBound encodes an optional time: 0 when unset, else 1 and its unix microseconds.
func appendBound(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(b, 0)
	}
	return binary.AppendVarint(append(b, 1), t.UnixMicro())
}

func (l listing) mac(key []byte, id string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(l.filter)
	m.Write([]byte{0})
	m.Write([]byte(id))
	return m.Sum(nil)[:macLen]
}

// next returns the cursor of the page that follows the row with id lastID.
func (l listing) next(key []byte, lastID string) string {
	b := append([]byte{cursorVersion}, lastID...)
	return base64.RawURLEncoding.EncodeToString(append(b, l.mac(key, lastID)...))
}

// open checks cursor against the filter and the key and returns the id it continues after.
func (l listing) open(key []byte, cursor string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || len(b) < 1+1+macLen || b[0] != cursorVersion {
		return "", check.Invalidf("malformed cursor")
	}
	id, sum := string(b[1:len(b)-macLen]), b[len(b)-macLen:]
	if !hmac.Equal(sum, l.mac(key, id)) {
		return "", check.Invalidf("cursor was not produced by this store for this filter")
	}
	return id, nil
}

// cursorKey returns the store's cursor key, asking the backend once; a failure is not
// remembered, so the next listing asks again.
func (s *Store) cursorKey(ctx context.Context) ([]byte, error) {
	s.keyMu.Lock()
	defer s.keyMu.Unlock()
	if s.key != nil {
		return s.key, nil
	}
	key, err := s.b.CursorKey(ctx)
	if err != nil {
		return nil, err
	}
	if len(key) < MinCursorKey {
		return nil, fmt.Errorf("stead: the backend's cursor key has %d bytes, fewer than %d", len(key), MinCursorKey)
	}
	s.key = slices.Clone(key)
	return s.key, nil
}
