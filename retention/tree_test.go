package retention_test

import (
	"context"
	"errors"
	"testing"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/memstore"
	"github.com/steadhq/stead/retention"
)

// TestPurgeTreeStatuses holds PurgeTree to its rule on every shape of tree: the root done or
// cancelled, every descendant done, cancelled or failed. A dry run and the real purge agree on
// each tree, and a refused one keeps every member.
func TestPurgeTreeStatuses(t *testing.T) {
	t.Parallel()
	const (
		done, cancelled, failed = stead.StatusDone, stead.StatusCancelled, stead.StatusFailed
		running, suspended      = stead.StatusRunning, stead.StatusSuspended
	)
	tests := []struct {
		name  string
		root  stead.Status
		child stead.Status
		grand stead.Status // a child of the child; "" for none
		ok    bool
	}{
		{"all done", done, done, "", true},
		{"a failed region child under a done root", done, failed, "", true},
		{"a failed child under a cancelled root", cancelled, failed, "", true},
		{"a failed grandchild under a failed child", done, failed, failed, true},
		{"a failed root", failed, done, "", false},
		{"a running child", done, running, "", false},
		{"a suspended grandchild", done, cancelled, suspended, false},
		{"a running root", running, failed, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			store := memstore.New()
			defer store.Close()
			members := []*stead.Execution{
				{ID: "r", DefinitionID: "d", Status: tt.root},
				{ID: "r:a:0", DefinitionID: "d", Status: tt.child, ParentID: "r", ChildID: "r:a:0", RootPath: "a"},
			}
			if tt.grand != "" {
				members = append(members, &stead.Execution{ID: "r:a:0:b:0", DefinitionID: "d", Status: tt.grand,
					ParentID: "r:a:0", ChildID: "r:a:0:b:0", RootPath: "b"})
			}
			for _, e := range members {
				if _, err := store.Save(ctx, e); err != nil {
					t.Fatal(err)
				}
			}
			for _, dry := range []bool{true, false} {
				res, err := retention.PurgeTree(ctx, store, "r", retention.Options{DryRun: dry})
				if tt.ok != (err == nil) {
					t.Fatalf("dry run %v: %v, want ok %v", dry, err, tt.ok)
				}
				if !tt.ok {
					var se *stead.StatusError
					if !errors.As(err, &se) || !errors.Is(err, stead.ErrInvalid) {
						t.Fatalf("dry run %v: refusal %v is not a *stead.StatusError", dry, err)
					}
				}
				if len(res.Members) != len(members) {
					t.Fatalf("dry run %v: members %v, want %d", dry, res.Members, len(members))
				}
			}
			for _, e := range members {
				_, err := store.Load(ctx, e.ID)
				if tt.ok != errors.Is(err, stead.ErrNotFound) {
					t.Errorf("%s after the purge: %v (purged: %v)", e.ID, err, tt.ok)
				}
			}
		})
	}
}
