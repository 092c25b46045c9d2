package stead

import (
	"encoding/base64"
	"errors"
	"testing"
)

func TestCursorRoundTrip(t *testing.T) {
	f := ListFilter{DefinitionID: "d1", Statuses: []Status{StatusRunning, StatusDone}, Limit: 4}
	q, err := prepareList(f)
	if err != nil {
		t.Fatal(err)
	}
	f.Cursor = q.next("exe-42")
	q2, err := prepareList(f)
	if err != nil {
		t.Fatal(err)
	}
	if q2.query.After != "exe-42" || q2.query.Limit != 4 {
		t.Fatalf("after = %q limit = %d", q2.query.After, q2.query.Limit)
	}
	// The status order does not change the filter.
	f.Statuses = []Status{StatusDone, StatusRunning, StatusDone}
	if _, err := prepareList(f); err != nil {
		t.Fatalf("same filter, other order: %v", err)
	}
}

func TestPrepareRefuses(t *testing.T) {
	valid, _ := prepareList(ListFilter{DefinitionID: "d1"})
	tests := []struct {
		name string
		f    ListFilter
	}{
		{"negative limit", ListFilter{Limit: -1}},
		{"huge limit", ListFilter{Limit: MaxListLimit + 1}},
		{"unknown status", ListFilter{Statuses: []Status{"zombie"}}},
		{"nul in definition", ListFilter{DefinitionID: "d\x00"}},
		{"garbage cursor", ListFilter{Cursor: "!!!"}},
		{"short cursor", ListFilter{Cursor: base64.RawURLEncoding.EncodeToString([]byte{1, 2})}},
		{"cursor of another filter", ListFilter{DefinitionID: "d2", Cursor: valid.next("x")}},
		{"cursor with empty key", ListFilter{DefinitionID: "d1", Cursor: valid.next("")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := prepareList(tt.f); !errors.Is(err, ErrInvalid) {
				t.Fatalf("Prepare = %v, want ErrInvalid", err)
			}
		})
	}
}
