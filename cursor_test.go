package stead

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"
)

var testKey = []byte(strings.Repeat("k", MinCursorKey))

func TestCursorRoundTrip(t *testing.T) {
	f := ListFilter{DefinitionID: "d1", Statuses: []Status{StatusRunning, StatusDone}, Limit: 4}
	q, err := prepareList(f)
	if err != nil {
		t.Fatal(err)
	}
	cursor := q.next(testKey, "exe-42")
	// The status order does not change the filter.
	f.Statuses = []Status{StatusDone, StatusRunning, StatusDone}
	q2, err := prepareList(f)
	if err != nil {
		t.Fatal(err)
	}
	if after, err := q2.open(testKey, cursor); err != nil || after != "exe-42" || q2.query.Limit != 4 {
		t.Fatalf("open = %q, %v (limit %d)", after, err, q2.query.Limit)
	}
}

// TestForgedCursors tries every truncation and every single-bit flip of a real cursor, the same
// cursor under another key and under another filter, and cursors built by hand: none opens.
func TestForgedCursors(t *testing.T) {
	q, _ := prepareList(ListFilter{DefinitionID: "d1"})
	real := q.next(testKey, "exe-42")
	raw, _ := base64.RawURLEncoding.DecodeString(real)
	var forged []string
	for n := range len(raw) {
		forged = append(forged, base64.RawURLEncoding.EncodeToString(raw[:n]))
	}
	for i := range raw {
		for bit := range 8 {
			b := append([]byte(nil), raw...)
			b[i] ^= 1 << bit
			forged = append(forged, base64.RawURLEncoding.EncodeToString(b))
		}
	}
	other, _ := prepareList(ListFilter{DefinitionID: "d2"})
	forged = append(forged,
		other.next(testKey, "exe-42"),
		q.next([]byte(strings.Repeat("x", MinCursorKey)), "exe-42"),
		base64.RawURLEncoding.EncodeToString(append([]byte{cursorVersion}, "exe-42"+strings.Repeat("\x00", macLen)...)),
		"!!!", real+"A", strings.Repeat("A", maxCursorLen+1),
	)
	for _, c := range forged {
		if after, err := q.open(testKey, c); !errors.Is(err, ErrInvalid) {
			t.Fatalf("forged cursor %q opened: %q, %v", c, after, err)
		}
	}
	if after, err := q.open(testKey, real); err != nil || after != "exe-42" {
		t.Fatalf("the real cursor: %q, %v", after, err)
	}
}

func TestPrepareListRefuses(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		f    ListFilter
	}{
		{"negative limit", ListFilter{Limit: -1}},
		{"huge limit", ListFilter{Limit: MaxListLimit + 1}},
		{"unknown status", ListFilter{Statuses: []Status{"zombie"}}},
		{"nul in definition", ListFilter{DefinitionID: "d\x00"}},
		{"oversized cursor", ListFilter{Cursor: strings.Repeat("A", maxCursorLen+1)}},
		{"nul in id prefix", ListFilter{IDPrefix: "a\x00"}},
		{"invalid UTF-8 id prefix", ListFilter{IDPrefix: "a\xff"}},
		{"oversized id prefix", ListFilter{IDPrefix: strings.Repeat("a", MaxIDLen+1)}},
		{"empty finished window", ListFilter{Finished: TimeRange{From: t0, Before: t0}}},
		{"reversed created window", ListFilter{Created: TimeRange{From: t0.Add(time.Hour), Before: t0}}},
		{"updated before year 1", ListFilter{Updated: TimeRange{Before: time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)}}},
		{"finished from year 10000", ListFilter{Finished: TimeRange{From: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := prepareList(tt.f); !errors.Is(err, ErrInvalid) {
				t.Fatalf("prepareList = %v, want ErrInvalid", err)
			}
		})
	}
}
