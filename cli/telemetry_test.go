package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestRunServesMetrics runs a worker through the command's own code path on SQLite with
// --metrics-addr, scrapes the endpoint while it works, and finds the step counter moving and the
// gauges of the queue and the executions.
func TestRunServesMetrics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := threeOrders(t, ctx, "m")
	addr := freeAddr(t)
	rctx, cancel := context.WithCancel(ctx)
	exited := make(chan string, 1)
	go func() {
		code, _, errOut := cli(t, rctx, "run", "--store", db, "--log-level", "warn", "--metrics-addr", addr)
		exited <- fmt.Sprintf("exit %d %s", code, errOut)
	}()
	defer func() {
		cancel()
		if got := <-exited; got != "exit 0 " {
			t.Errorf("run: %s", got)
		}
	}()

	body, ok := awaitSteps(addr, 3)
	if !ok {
		t.Fatalf("no committed steps in the metrics after 20 s:\n%s", body)
	}
	for _, want := range []string{"stead_step_duration_seconds_bucket", `stead_executions{`, "stead_queue_depth", "stead_outbox_backlog"} {
		if !regexp.MustCompile(regexp.QuoteMeta(want)).MatchString(body) {
			t.Errorf("the metrics lack %s:\n%s", want, body)
		}
	}
}

// threeOrders migrates a fresh SQLite store and starts three orders in it (ids prefix0..2), for
// a run to step; it returns the store's path.
func threeOrders(t *testing.T, ctx context.Context, prefix string) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), prefix+".db")
	if code, _, errOut := cli(t, ctx, "migrate", "--store", db); code != 0 {
		t.Fatalf("migrate: %d %q", code, errOut)
	}
	for i := range 3 {
		id := fmt.Sprintf("%s%d", prefix, i)
		if code, _, errOut := cli(t, ctx, "start", "--store", db, "order", "--id", id,
			"--context", `{"order_id":"`+id+`","amount":50,"outcome":"timeout"}`); code != 0 {
			t.Fatalf("start: %d %q", code, errOut)
		}
	}
	return db
}

// committedSteps matches the committed-step counter of a metrics page.
var committedSteps = regexp.MustCompile(`(?m)^stead_steps_total\{[^}]*stead_step_outcome="committed"[^}]*\} (\d+)`)

// awaitSteps scrapes addr until its step counter reads at least n committed steps, for up to
// 20 s; it returns the last page and whether it got there.
func awaitSteps(addr string, n int) (string, bool) {
	deadline := time.Now().Add(20 * time.Second)
	for {
		body := scrape(addr)
		if m := committedSteps.FindStringSubmatch(body); m != nil {
			if got, _ := strconv.Atoi(m[1]); got >= n {
				return body, true
			}
		}
		if time.Now().After(deadline) {
			return body, false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freeAddr returns a loopback address with a port nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// scrape returns the metrics page, or "" while the endpoint is not up.
func scrape(addr string) string {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestRunRefusesATakenMetricsPort: a port in use ends run at once with one line.
func TestRunRefusesATakenMetricsPort(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	db := newStore(t, filepath.Join(t.TempDir(), "p.db"))
	code, _, errOut := cli(t, context.Background(), "run", "--store", db, "--metrics-addr", ln.Addr().String())
	if code == 0 || !regexp.MustCompile(`metrics-addr`).MatchString(errOut) {
		t.Fatalf("run on a taken port: exit %d, stderr %q", code, errOut)
	}
}

// TestRunTraceSample runs a worker on SQLite with --otlp-endpoint at a collector stand-in until
// three orders have stepped, once keeping every trace (the default) and once none
// (--trace-sample 0): the first sends spans, the second sends none but still its metrics.
func TestRunTraceSample(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		args   []string
		traces bool
	}{
		{"default", nil, true},
		{"none", []string{"--trace-sample", "0"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			got := map[string]int{}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				got[r.URL.Path]++
				mu.Unlock()
				w.Header().Set("Content-Type", "application/x-protobuf")
				w.WriteHeader(http.StatusOK)
			}))
			defer srv.Close()
			ctx := context.Background()
			db := threeOrders(t, ctx, "s")
			addr := freeAddr(t)
			rctx, cancel := context.WithCancel(ctx)
			exited := make(chan string, 1)
			go func() {
				args := append([]string{"run", "--store", db, "--log-level", "warn", "--metrics-addr", addr,
					"--otlp-endpoint", srv.URL}, tc.args...)
				code, _, errOut := cli(t, rctx, args...)
				exited <- fmt.Sprintf("exit %d %s", code, errOut)
			}()
			if _, ok := awaitSteps(addr, 3); !ok {
				cancel()
				t.Fatalf("no committed steps after 20 s (%s)", <-exited)
			}
			cancel() // the shutdown flushes both exporters
			if res := <-exited; res != "exit 0 " {
				t.Fatalf("run: %s", res)
			}
			mu.Lock()
			defer mu.Unlock()
			if (got["/v1/traces"] > 0) != tc.traces || got["/v1/metrics"] == 0 {
				t.Fatalf("the collector received %v; want traces %v, and metrics", got, tc.traces)
			}
		})
	}
}
