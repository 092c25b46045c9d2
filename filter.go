package stead

import (
	"strings"
	"time"
	"unicode/utf8"
)

// TimeRange is a half-open window of time for listing: it keeps times at or after From and
// strictly before Before, so that adjacent windows never share an instant. A zero bound is no
// bound; the zero TimeRange keeps everything. A window never keeps an unset time: an execution
// that has not finished is outside every window on its finish time.
type TimeRange struct {
	From   time.Time
	Before time.Time
}

// IsZero reports whether r sets neither bound.
func (r TimeRange) IsZero() bool { return r.From.IsZero() && r.Before.IsZero() }

// Contains reports whether t lies in r. An unset t lies in no window but the zero one.
func (r TimeRange) Contains(t time.Time) bool {
	if r.IsZero() {
		return true
	}
	if t.IsZero() {
		return false
	}
	return (r.From.IsZero() || !t.Before(r.From)) && (r.Before.IsZero() || t.Before(r.Before))
}

// PrefixEnd returns the least string that is greater, byte-wise, than every string starting with
// prefix, or "" when no such string exists (prefix is empty or made of U+10FFFF alone). So
// "s starts with prefix" is exactly "prefix <= s && (end == "" || s < end)" for every valid UTF-8
// s: a range an index answers, with no pattern characters to escape and no collation to trust.
// The result is valid UTF-8 when prefix is, so PostgreSQL takes it as text.
//
// It increments the last code point of prefix (skipping the surrogates, which UTF-8 cannot
// encode), carrying past U+10FFFF: byte-wise order of UTF-8 is code-point order, and no code
// point lies strictly between one and its successor.
func PrefixEnd(prefix string) string {
	for prefix != "" {
		r, size := utf8.DecodeLastRuneInString(prefix)
		head := prefix[:len(prefix)-size]
		if r == utf8.RuneError && size <= 1 {
			// Not UTF-8 (a Store never passes one): increment the byte itself.
			if b := prefix[len(prefix)-1]; b < 0xFF {
				return head + string([]byte{b + 1})
			}
			prefix = head
			continue
		}
		switch {
		case r == utf8.MaxRune:
			prefix = head
			continue
		case r == 0xD7FF:
			r = 0xE000 // past the surrogates
		default:
			r++
		}
		var b strings.Builder
		b.Grow(len(head) + utf8.UTFMax)
		b.WriteString(head)
		b.WriteRune(r)
		return b.String()
	}
	return ""
}

// Matches reports whether s passes every filter of q but its attribute conditions (and not the
// page bounds After and Limit): the reference meaning of a ListQuery with MatchesAttributes,
// which backends that filter in Go (memstore, a map) call, and which SQL backends express in
// their WHERE clause.
func (q *ListQuery) Matches(s *Summary) bool {
	switch {
	case q.DefinitionID != "" && s.DefinitionID != q.DefinitionID:
		return false
	case q.RootsOnly && s.ParentID != "":
		return false
	case len(q.Statuses) > 0 && !containsStatus(q.Statuses, s.Status):
		return false
	case q.IDPrefix != "" && !strings.HasPrefix(s.ID, q.IDPrefix):
		return false
	}
	return q.Created.Contains(s.CreatedAt) && q.Updated.Contains(s.UpdatedAt) && q.Finished.Contains(s.FinishedAt)
}

// MatchesAttributes reports whether attrs, an execution's indexed attributes, satisfy every
// attribute condition of q.
func (q *ListQuery) MatchesAttributes(attrs map[string]AttrValue) bool {
	for i := range q.Attributes {
		if !q.Attributes[i].Matches(attrs) {
			return false
		}
	}
	return true
}

func containsStatus(ss []Status, s Status) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
