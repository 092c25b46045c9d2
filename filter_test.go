package stead

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// TestPrefixEnd holds PrefixEnd to its promise: for every string s, s starts with p exactly when
// p <= s < PrefixEnd(p), on prefixes and strings made of the code points where carrying and
// surrogates matter, and the bound is valid UTF-8.
func TestPrefixEnd(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ prefix, want string }{
		{"", ""},
		{"a", "b"},
		{"r:", "r;"},
		{"a%", "a&"},
		{`a\`, "a]"},
		{"a\u007f", "a\u0080"},
		{"a\ud7ff", "a\ue000"},
		{"a\U0010ffff", "b"},
		{"\U0010ffff\U0010ffff", ""},
		{"é", "ê"},
	} {
		if got := PrefixEnd(c.prefix); got != c.want {
			t.Errorf("PrefixEnd(%q) = %q, want %q", c.prefix, got, c.want)
		}
	}
	runes := []rune{'a', 'b', ':', '%', '_', '\\', 0x7f, 0x80, 0x7ff, 0x800, 0xd7ff, 0xe000, 0xffff, 0x10000, utf8.MaxRune}
	r := rand.New(rand.NewPCG(3, 4))
	word := func() string {
		var b strings.Builder
		for range r.IntN(4) {
			b.WriteRune(runes[r.IntN(len(runes))])
		}
		return b.String()
	}
	for range 20000 {
		p, s := word(), word()
		if r.IntN(2) == 0 {
			s = p + s
		}
		end := PrefixEnd(p)
		if !utf8.ValidString(end) {
			t.Fatalf("PrefixEnd(%q) = %q, not UTF-8", p, end)
		}
		in := p <= s && (end == "" || s < end)
		if in != strings.HasPrefix(s, p) {
			t.Fatalf("prefix %q, end %q, string %q: in range %v, HasPrefix %v", p, end, s, in, !in)
		}
	}
}

func TestTimeRangeContains(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Hour)
	for _, c := range []struct {
		r    TimeRange
		at   time.Time
		want bool
	}{
		{TimeRange{}, time.Time{}, true},
		{TimeRange{}, t0, true},
		{TimeRange{From: t0}, t0, true},
		{TimeRange{From: t0}, t0.Add(-time.Microsecond), false},
		{TimeRange{Before: t1}, t1, false},
		{TimeRange{Before: t1}, t1.Add(-time.Microsecond), true},
		{TimeRange{From: t0, Before: t1}, t0.Add(time.Minute), true},
		{TimeRange{Before: t1}, time.Time{}, false},
		{TimeRange{From: t0}, time.Time{}, false},
	} {
		if got := c.r.Contains(c.at); got != c.want {
			t.Errorf("%+v.Contains(%v) = %v, want %v", c.r, c.at, got, c.want)
		}
	}
}

// TestCanonicalFilterKeepsOldBytes pins the bytes of a filter that sets none of the fields added
// with the id prefix and the time windows: cursors issued before they existed must still open.
func TestCanonicalFilterKeepsOldBytes(t *testing.T) {
	t.Parallel()
	q := ListQuery{DefinitionID: "d", Statuses: []Status{StatusRunning}, RootsOnly: true}
	want := []byte("\x01d\x01\x07running\x01")
	if got := canonicalFilter(q); !bytes.Equal(got, want) {
		t.Fatalf("canonical bytes %q, want %q", got, want)
	}
}

// TestCursorBoundToNewFilters checks that a cursor opens only under the filter it was made for,
// id prefix and every window bound included.
func TestCursorBoundToNewFilters(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	base := ListFilter{IDPrefix: "order-", Finished: TimeRange{Before: t0}}
	q, err := prepareList(base)
	if err != nil {
		t.Fatal(err)
	}
	cursor := q.next(testKey, "order-7")
	for _, f := range []ListFilter{
		{},
		{IDPrefix: "order-"},
		{IDPrefix: "order", Finished: TimeRange{Before: t0}},
		{IDPrefix: "order-", Finished: TimeRange{Before: t0.Add(time.Microsecond)}},
		{IDPrefix: "order-", Finished: TimeRange{From: t0.Add(-time.Hour), Before: t0}},
		{IDPrefix: "order-", Updated: TimeRange{Before: t0}},
		{IDPrefix: "order-", Created: TimeRange{Before: t0}},
		{IDPrefix: "order-", Finished: TimeRange{Before: t0}, Created: TimeRange{From: t0}},
	} {
		other, err := prepareList(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.open(testKey, cursor); !errors.Is(err, ErrInvalid) {
			t.Fatalf("cursor of %+v opened under %+v: %v", base, f, err)
		}
	}
	// The same window given in another zone, or with nanoseconds the store does not keep, is the
	// same filter.
	same := base
	same.Finished.Before = t0.In(time.FixedZone("x", 3600)).Add(300 * time.Nanosecond)
	q2, err := prepareList(same)
	if err != nil {
		t.Fatal(err)
	}
	if after, err := q2.open(testKey, cursor); err != nil || after != "order-7" {
		t.Fatalf("open under the same filter = %q, %v", after, err)
	}
}
