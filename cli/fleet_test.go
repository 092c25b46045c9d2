package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/schedule"
)

const meteredYAML = `id: metered
context: {customer: string, began: string, ended: string}
limit: {key: context.customer, concurrency: 1}
initial: busy
states:
  busy:
    entry: [hold]
    on: {finish: done}
  done: {final: success}
`

const tickerYAML = `id: ticker
initial: idle
states:
  idle: {on: {go: done}}
  done: {final: success}
schedules:
  every-second: {every: 1s, overlap: allow_all, catch_up: all, window: 1m}
`

// TestFleetLimitsAndSchedules runs what a user declares in YAML — a per-customer limit and a
// schedule — on three `stead run` processes sharing one PostgreSQL schema, and SIGKILLs one of
// them midway: every tick in the span fires exactly once, every execution finishes, and no
// customer ever has two of its actions running at once (each records when it ran).
func TestFleetLimitsAndSchedules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	metered, ticker := filepath.Join(dir, "metered.yaml"), filepath.Join(dir, "ticker.yaml")
	for path, text := range map[string]string{metered: meteredYAML, ticker: tickerYAML} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	store := []string{"--store", pgdbtest.URL(), "--schema", pgdbtest.Schema(t)}
	with := func(args ...string) []string { return append(args, store...) }
	if code, _, errOut := cli(t, ctx, with("migrate")...); code != 0 {
		t.Fatalf("migrate: %s", errOut)
	}
	const customers, each = 3, 8
	var ids []string
	for k := range customers {
		for i := range each {
			id := fmt.Sprintf("c%d-%d", k, i)
			ids = append(ids, id)
			if code, _, errOut := cli(t, ctx, with("start", "metered", "--definition", metered, "--id", id,
				"--context", fmt.Sprintf(`{"customer":"c%d"}`, k))...); code != 0 {
				t.Fatalf("start %s: %s", id, errOut)
			}
		}
	}

	run := func(n int) *exec.Cmd {
		cmd := exec.Command(os.Args[0], with("run", "--definition", metered, "--definition", ticker,
			"--name", fmt.Sprintf("w%d", n), "--log-level", "warn")...)
		cmd.Env = append(os.Environ(), envRunCLI+"=1")
		var errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &errOut, &errOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			if t.Failed() {
				t.Logf("worker %d said:\n%s", n, errOut.String())
			}
		})
		return cmd
	}
	procs := []*exec.Cmd{run(0), run(1), run(2)}
	begin := time.Now().UTC().Truncate(time.Second).Add(2 * time.Second)
	time.Sleep(1500 * time.Millisecond)
	if err := procs[0].Process.Kill(); err != nil { // SIGKILL: its leases end on their own
		t.Fatal(err)
	}
	deadline := time.Now().Add(90 * time.Second)
	inspect := func(id string) (*stead.Execution, bool) {
		code, out, _ := cli(t, ctx, with("inspect", id, "--json")...)
		var d struct{ Execution *stead.Execution }
		if code != 0 || json.Unmarshal([]byte(out), &d) != nil || d.Execution == nil {
			return nil, false
		}
		return d.Execution, true
	}
	for _, id := range ids {
		for {
			exe, ok := inspect(id)
			if ok && exe.ActivePath != "" && strings.Contains(string(exe.Context), "ended") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s did not run its action in 90s", id)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	time.Sleep(2 * time.Second) // more ticks under the two survivors
	end := time.Now().UTC().Truncate(time.Second).Add(-2 * time.Second)
	for _, p := range procs[1:] {
		_ = p.Process.Signal(os.Interrupt)
	}

	// No customer had two actions running at once.
	type span struct{ from, to time.Time }
	byCustomer := map[string][]span{}
	for _, id := range ids {
		exe, _ := inspect(id)
		var c struct{ Customer, Began, Ended string }
		if err := json.Unmarshal(exe.Context, &c); err != nil {
			t.Fatal(err)
		}
		from, err1 := time.Parse(time.RFC3339Nano, c.Began)
		to, err2 := time.Parse(time.RFC3339Nano, c.Ended)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: context %s", id, exe.Context)
		}
		byCustomer[c.Customer] = append(byCustomer[c.Customer], span{from, to})
	}
	for customer, spans := range byCustomer {
		slices.SortFunc(spans, func(a, b span) int { return a.from.Compare(b.from) })
		for i := 1; i < len(spans); i++ {
			if spans[i].from.Before(spans[i-1].to) {
				t.Errorf("customer %s: an action began at %v while another ran until %v (limit 1)",
					customer, spans[i].from, spans[i-1].to)
			}
		}
	}
	// Every tick of the schedule from begin to end fired exactly once.
	for tick := begin; !tick.After(end); tick = tick.Add(time.Second) {
		id := schedule.ExecutionID("every-second", tick)
		if _, ok := inspect(id); !ok {
			t.Errorf("tick %s fired no execution", id)
		}
	}
}
