package cli

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/sqlitestore"
)

// seedFailed writes failed executions straight into the SQLite store at path: of definition def,
// at state waiting, with a dead letter (the approved event) when dead is set.
func seedFailed(t *testing.T, path string, execs map[string]struct {
	def  string
	dead bool
}) {
	t.Helper()
	ctx := t.Context()
	db, err := sqlitedb.Open(ctx, sqlitedb.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := sqlitestore.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now().UTC().Truncate(time.Millisecond)
	for id, e := range execs {
		exe := &stead.Execution{ID: id, DefinitionID: e.def, Status: stead.StatusFailed, ActivePath: "waiting",
			Context: json.RawMessage(`{"amount":5}`), Error: "open_ticket failed", CreatedAt: now, UpdatedAt: now, FinishedAt: now}
		if e.dead {
			exe.DeadLetter = &stead.DeadLetter{Event: stead.Event{ID: "ev-" + id, Kind: "approved", CreatedAt: now},
				Status: stead.StatusRunning, ActivePath: "waiting", Context: exe.Context}
		}
		if _, err := s.Commit(ctx, exe, stead.Bundle{}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRetryDryRunAgrees runs `retry --dry-run` and then `retry` on the same selection and by
// ids, from the user's own binary, over failed executions it can retry, one without a dead
// letter and one of a definition it does not have: both say the same of each execution.
func TestRetryDryRunAgrees(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	own := approvalConfig(t, new(atomic.Bool))
	execs := map[string]struct {
		def  string
		dead bool
	}{
		"a-retry": {"approval", true}, "a-bare": {"approval", false}, "x-other": {"other", true},
	}
	// The report's numbers and refusals, with "would apply" and "(dry run)" read as the real ones.
	normal := strings.NewReplacer(" (dry run)", "", "would apply", "applied", "would retry", "retry")
	commandID := regexp.MustCompile(`\(command [^)]*\)`)
	for _, tc := range []struct {
		name string
		args []string
		want []string // lines both print
	}{
		{"a selection", []string{"--status", "failed"}, []string{
			"retry: 3 matched, 1 applied, 0 applied before, 2 refused",
			`refused a-bare: invalid input: retry "a-bare": it keeps no dead letter to apply again`,
			`refused x-other: invalid input: definition "other" is not loaded: give its file with --definition`,
		}},
		{"ids", []string{"a-retry", "a-bare", "x-other"}, []string{
			`a-bare  refused: invalid input: retry "a-bare": it keeps no dead letter to apply again`,
			`x-other  refused: invalid input: definition "other" is not loaded`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := newStore(t, t.TempDir()+"/dry.db")
			seedFailed(t, db, execs)
			args := append([]string{"retry", "--store", db, "--command-id", "c1"}, tc.args...)
			dcode, dout, derr := cliWith(t, ctx, own, append(args, "--dry-run")...)
			if got := status(t, db, "a-retry"); got != "failed" {
				t.Fatalf("the dry run retried a-retry: %s", got)
			}
			code, out, errOut := cliWith(t, ctx, own, args...)
			if dcode != exitRefused || code != exitRefused {
				t.Fatalf("exit %d then %d, want %d: dry run\n%s%s\nretry\n%s%s", dcode, code, exitRefused, dout, derr, out, errOut)
			}
			dlines, lines := strings.Split(commandID.ReplaceAllString(normal.Replace(dout), ""), "\n"), strings.Split(commandID.ReplaceAllString(out, ""), "\n")
			var rdry, rreal []string
			for _, l := range dlines {
				if strings.Contains(l, "refused") {
					rdry = append(rdry, l)
				}
			}
			for _, l := range lines {
				if strings.Contains(l, "refused") {
					rreal = append(rreal, l)
				}
			}
			if strings.Join(rdry, "\n") != strings.Join(rreal, "\n") {
				t.Fatalf("the dry run said\n%s\nthe retry said\n%s", dout, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) || !strings.Contains(normal.Replace(dout), w) {
					t.Errorf("want %q in both:\ndry run\n%s\nretry\n%s", w, dout, out)
				}
			}
			if len(tc.args) == 3 && !strings.Contains(dout, "a-retry  would retry") {
				t.Errorf("dry run:\n%s", dout)
			}
			if got := status(t, db, "a-retry"); got == "failed" {
				t.Errorf("a-retry is still failed after the retry")
			}
		})
	}
}
