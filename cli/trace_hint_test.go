package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestInspectSaysHowToKeepHistory: an execution without event history is shown with how to
// turn it on, not with an empty list alone.
func TestInspectSaysHowToKeepHistory(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := newStore(t, filepath.Join(t.TempDir(), "s.db"))
	if code, _, errOut := cli(t, ctx, "start", "--store", db, "order", "--id", "o1",
		"--context", `{"order_id":"o1","amount":50,"outcome":"ok"}`); code != 0 {
		t.Fatalf("start: exit %d: %s", code, errOut)
	}
	code, out, errOut := cli(t, ctx, "inspect", "--store", db, "o1")
	if code != 0 || !strings.Contains(out, "trace (0)") || !strings.Contains(out, "stead run --trace") {
		t.Fatalf("inspect of an execution without history: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
