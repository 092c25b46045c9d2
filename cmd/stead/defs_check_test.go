package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/cmd/stead/internal/backend"
)

// defs check replays what executions of flow@1 did against a flow@2 file and names the ones
// whose path the new file changes.
func TestDefsCheckReplaysTracesAgainstTheNewVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	const v1 = "id: flow\nversion: 1\ntrace: true\ninitial: a\nstates:\n  a: {on: {go: b, skip: c}}\n  b: {final: success}\n  c: {final: failure}\n"
	record(t, ctx, db, v1, map[string][]string{"went": {"go"}, "skipped": {"skip"}, "waiting": nil})

	cases := []struct {
		name string
		src  string
		code int
		want []string
	}{
		{"a new event only", strings.Replace(v1, "skip: c}", "skip: c, hold: a}", 1), 0,
			[]string{"flow@2                   3 replayed, 0 changed, 0 untraced, 0 steps not judged"}},
		{"go leads elsewhere", strings.Replace(v1, "{go: b, skip: c}", "{go: c, skip: b}", 1), 1,
			[]string{"CHANGED  went (flow@1) step 1, go in a: goes to c instead of b",
				"CHANGED  skipped (flow@1) step 1, skip in a: goes to b instead of c",
				"3 replayed, 2 changed"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, "v2-"+string(rune('a'+i))+".yaml")
			if err := os.WriteFile(p, []byte(strings.Replace(tc.src, "version: 1", "version: 2", 1)), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := cli(t, ctx, "defs", "check", "--store", db, "--definition", p)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.code, out, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if tc.code != 0 && !strings.Contains(errOut, "2 executions would change their path") {
				t.Errorf("stderr %q", errOut)
			}
		})
	}
	if code, _, errOut := cli(t, ctx, "defs", "check", "--store", db, "--status", "nope"); code != exitUsage {
		t.Errorf("bad status: exit %d %q", code, errOut)
	}
}

// record runs executions of the definition src in the store at db, applying the events given,
// with the engine and the store's commits as a worker would.
func record(t *testing.T, ctx context.Context, db, src string, runs map[string][]string) {
	t.Helper()
	def, err := chart.Parse("v1.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	eng, err := chart.NewEngine(def, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := backend.Open(ctx, db, backend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for id, kinds := range runs {
		exe := &stead.Execution{ID: id, DefinitionID: eng.DefinitionID(), Status: stead.StatusPending, CreatedAt: now}
		for i, kind := range append([]string{chart.KindStart}, kinds...) {
			next, bundle, err := eng.Step(exe, stead.Event{ID: id + "-" + kind, Kind: kind}, now.Add(time.Duration(i)*time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			c, err := b.Store.Commit(ctx, next, bundle)
			if err != nil {
				t.Fatal(err)
			}
			next.Version = c.Version
			exe = next
		}
	}
}
