package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/steadhq/stead/pgdb/pgdbtest"
)

// TestPgBouncerFlag runs stead through a real PgBouncer in transaction mode: with --pgbouncer
// (and --listen-url for the wake-ups) start, send and inspect work every time; without it the
// command fails with one line that names the flag.
func TestPgBouncerFlag(t *testing.T) {
	t.Parallel()
	url := pgdbtest.BouncerURL(t)
	schema := pgdbtest.Schema(t)
	ctx := context.Background()
	flags := []string{"--store", url, "--schema", schema, "--pgbouncer", "--listen-url", pgdbtest.URL()}
	if code, out, errOut := cli(t, ctx, append([]string{"migrate"}, flags...)...); code != 0 {
		t.Fatalf("migrate --pgbouncer: %d %q %q", code, out, errOut)
	}
	for i := range 5 {
		code, out, errOut := cli(t, ctx, append([]string{"start", "order", "--context", `{"order_id":"o","amount":5,"outcome":"ok"}`}, flags...)...)
		if code != 0 || !strings.HasPrefix(out, "exe-") {
			t.Fatalf("start %d through PgBouncer: %d %q %q", i, code, out, errOut)
		}
	}
	if code, out, errOut := cli(t, ctx, append([]string{"inspect"}, flags...)...); code != 0 || strings.Count(out, "exe-") != 5 {
		t.Fatalf("inspect through PgBouncer: %d %q %q", code, out, errOut)
	}
	// Without the flag, a few commands in a row: the first whose statements meet another's on
	// PgBouncer's server connection fails, with one line that says what to do.
	failed := false
	for range 10 {
		code, _, errOut := cli(t, ctx, "inspect", "--store", url, "--schema", schema)
		if code == 0 {
			continue
		}
		failed = true
		if lines := strings.Split(strings.TrimRight(errOut, "\n"), "\n"); len(lines) != 1 || !strings.Contains(errOut, "--pgbouncer") {
			t.Fatalf("without --pgbouncer: exit %d, stderr %q: want one line naming --pgbouncer", code, errOut)
		}
		break
	}
	if !failed {
		t.Log("without --pgbouncer every command happened to succeed (no statement met another's)")
	}
}
