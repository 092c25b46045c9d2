package chart

import (
	"errors"
	"strings"
	"testing"

	"github.com/steadhq/stead"
)

func TestVersionedID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id      string
		base    string
		version int
	}{
		{"order", "order", 0},
		{"order@2", "order", 2},
		{"order@12", "order", 12},
		{"a@b@3", "a@b", 3},
		{"order@0", "order@0", 0},
		{"order@02", "order@02", 0},
		{"order@x", "order@x", 0},
		{"@3", "@3", 0},
		{"order@-1", "order@-1", 0},
	}
	for _, tt := range tests {
		if b, v := SplitVersion(tt.id); b != tt.base || v != tt.version {
			t.Errorf("SplitVersion(%q) = %q, %d, want %q, %d", tt.id, b, v, tt.base, tt.version)
		}
	}
	d := &Definition{ID: "order", Version: 3}
	if d.VersionedID() != "order@3" || (&Definition{ID: "order"}).VersionedID() != "order" {
		t.Fatal(d.VersionedID())
	}
}

// An engine runs the executions of its own version only: each execution keeps the version it
// started on.
func TestEngineRunsItsVersion(t *testing.T) {
	t.Parallel()
	var log logger
	v1 := mustEngine(t, "id: flow\nversion: 1\ninitial: a\nstates:\n  a: {on: {go: b}}\n  b: {final: success}\n", &log, nil)
	v2 := mustEngine(t, "id: flow\nversion: 2\ninitial: a\nstates:\n  a: {on: {go: c}}\n  c: {final: success}\n", &log, nil)
	if v1.DefinitionID() != "flow@1" || v2.DefinitionID() != "flow@2" {
		t.Fatalf("%q %q", v1.DefinitionID(), v2.DefinitionID())
	}
	exe, _ := run(t, v1)
	if exe.DefinitionID != "flow@1" {
		t.Fatalf("recorded %q", exe.DefinitionID)
	}
	if _, _, err := v2.Step(exe, stead.Event{ID: "g", Kind: "go"}, t0); !errors.Is(err, stead.ErrInvalid) {
		t.Fatalf("v2 stepped a v1 execution: %v", err)
	}
	for _, tt := range []struct{ src, want string }{
		{"id: flow\nversion: -1\ninitial: a\nstates: {a: {}}\n", "version -1 must be positive"},
		{"id: a@b\nversion: 2\ninitial: a\nstates: {a: {}}\n", "cannot hold '@'"},
		{"id: flow\nversion: two\ninitial: a\nstates: {a: {}}\n", "test.yaml:2:10: version: expected a whole number"},
	} {
		if _, err := Parse("test.yaml", []byte(tt.src)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want %q", tt.src, err, tt.want)
		}
	}
	b := New("flow").Version(4)
	b.Initial("a").State("a")
	if def, err := b.Definition(); err != nil || def.VersionedID() != "flow@4" {
		t.Fatalf("builder: %v %v", def, err)
	}
}
