package cli

import (
	"context"
	"encoding/json"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/steadhq/stead/doctor"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgdb/pgdbtest"
)

// TestDoctor runs stead doctor on a two-host URL (the same server twice: the CLI takes a primary
// and its standbys in one --store): nothing stranded exits 0, a pending execution with nothing
// queued is listed as certain and exits 3, and a SQLite store is a usage mistake.
func TestDoctor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgdbtest.Pool(t)
	schema := pgdbtest.Schema(t)
	u, err := url.Parse(pgdbtest.URL())
	if err != nil {
		t.Fatal(err)
	}
	u.Host = u.Host + "," + u.Host
	store := u.String()

	code, out, errOut := cli(t, ctx, "doctor", "--store", store, "--schema", schema)
	if code != exitOK || !strings.Contains(out, "every pending and running execution") {
		t.Fatalf("doctor on an empty store: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO `+pgdb.Qualifier(schema)+`stead_executions
		(id, definition_id, status, version, updated_at, data) VALUES ('lost-start', 'flow', 'pending', 1, $1, '{}')`,
		time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = cli(t, ctx, "doctor", "--store", store, "--schema", schema, "--json")
	if code != exitRefused {
		t.Fatalf("doctor with a stranded execution: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	var found []doctor.Finding
	if err := json.Unmarshal([]byte(out), &found); err != nil {
		t.Fatalf("--json: %v: %q", err, out)
	}
	if len(found) != 1 || found[0].ID != "lost-start" || !found[0].Certain {
		t.Fatalf("doctor found %+v, want lost-start, certain", found)
	}

	code, _, errOut = cli(t, ctx, "doctor", "--store", newStore(t, filepath.Join(t.TempDir(), "s.db")))
	if code != exitUsage || !strings.Contains(errOut, "PostgreSQL") {
		t.Fatalf("doctor on SQLite: exit %d, stderr %q", code, errOut)
	}
}
