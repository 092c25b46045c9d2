package listing

import (
	"encoding/base64"
	"errors"
	"testing"

	"github.com/steadhq/stead"
)

func TestCursorRoundTrip(t *testing.T) {
	f := stead.ListFilter{DefinitionID: "d1", Statuses: []stead.Status{stead.StatusRunning, stead.StatusDone}, Limit: 4}
	q, err := Prepare(f)
	if err != nil {
		t.Fatal(err)
	}
	f.Cursor = q.Next("exe-42")
	q2, err := Prepare(f)
	if err != nil {
		t.Fatal(err)
	}
	if q2.After != "exe-42" || q2.Limit != 4 {
		t.Fatalf("after = %q limit = %d", q2.After, q2.Limit)
	}
	// The status order does not change the filter.
	f.Statuses = []stead.Status{stead.StatusDone, stead.StatusRunning, stead.StatusDone}
	if _, err := Prepare(f); err != nil {
		t.Fatalf("same filter, other order: %v", err)
	}
}

func TestPrepareRefuses(t *testing.T) {
	valid, _ := Prepare(stead.ListFilter{DefinitionID: "d1"})
	tests := []struct {
		name string
		f    stead.ListFilter
	}{
		{"negative limit", stead.ListFilter{Limit: -1}},
		{"huge limit", stead.ListFilter{Limit: stead.MaxListLimit + 1}},
		{"unknown status", stead.ListFilter{Statuses: []stead.Status{"zombie"}}},
		{"nul in definition", stead.ListFilter{DefinitionID: "d\x00"}},
		{"garbage cursor", stead.ListFilter{Cursor: "!!!"}},
		{"short cursor", stead.ListFilter{Cursor: base64.RawURLEncoding.EncodeToString([]byte{1, 2})}},
		{"cursor of another filter", stead.ListFilter{DefinitionID: "d2", Cursor: valid.Next("x")}},
		{"cursor with empty key", stead.ListFilter{DefinitionID: "d1", Cursor: valid.Next("")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Prepare(tt.f); !errors.Is(err, stead.ErrInvalid) {
				t.Fatalf("Prepare = %v, want ErrInvalid", err)
			}
		})
	}
}
