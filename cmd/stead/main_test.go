package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/steadhq/stead/cli"
)

// run runs the stock stead in-process and returns its exit code, stdout and stderr.
func run(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Run(ctx, config(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestSampleCommandsHelp(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"demo", "demo-operate", "bench"} {
		code, out, errOut := run(t, context.Background(), cmd, "--help")
		if code != 0 || !strings.Contains(out, "Usage:") || errOut != "" {
			t.Errorf("stead %s --help: exit %d, stdout %q, stderr %q", cmd, code, out, errOut)
		}
	}
	code, _, errOut := run(t, context.Background(), "bench", "--concurrency", "x")
	if code != 2 || !strings.HasPrefix(errOut, "stead: --concurrency") {
		t.Errorf("bench --concurrency x: exit %d, stderr %q: want 2 and a usage line", code, errOut)
	}
}

// TestDemo runs a small demo and checks its outcome mix, which depends on nothing but the
// number of orders.
func TestDemo(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "demo.db")
	code, out, errOut := run(t, context.Background(), "demo", "--db", db, "--orders", "40")
	if code != 0 {
		t.Fatalf("demo: exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"done/success  24", "done/refunded   6", "done/declined   4", "done/expired   4", "done/failure   2",
		"region children run: 60", "events processed:", "events/s", "database:            " + db,
		"deliveries done/success:  4 (each invoked a carrier machine: 4 children; booking attempts 8",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
}

func TestDemoOperate(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "operate.db")
	code, out, errOut := run(t, context.Background(), "demo-operate", "--db", db)
	if code != 0 {
		t.Fatalf("demo-operate: exit %d: %s\n%s", code, errOut, out)
	}
	for _, want := range []string{
		"10 suspended", "20 shipped; the 10 suspended ones still await payment",
		"5 resumed", "5 cancelling", "refused", "would purge 30 trees (80 executions",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("demo-operate output lacks %q:\n%s", want, out)
		}
	}
}

// syncBuffer is a bytes.Buffer that a running command writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServeDemoFile is the newcomer's path: stead demo, then stead serve on the file it left.
func TestServeDemoFile(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "stead-demo.db")
	if code, _, errOut := run(t, context.Background(), "demo", "--db", db, "--orders", "20"); code != 0 {
		t.Fatalf("demo: exit %d: %s", code, errOut)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(ctx, config(), []string{"serve", "--addr", "127.0.0.1:0", "--store", db}, &out, &errOut)
	}()
	addr := regexp.MustCompile(`console on (http://127\.0\.0\.1:\d+)`)
	var base string
	for deadline := time.Now().Add(30 * time.Second); base == ""; time.Sleep(20 * time.Millisecond) {
		if m := addr.FindStringSubmatch(out.String()); m != nil {
			base = m[1]
		} else if time.Now().After(deadline) {
			cancel()
			t.Fatalf("serve printed no address (exit %d): %s", <-done, errOut.String())
		}
	}
	get := func(url string) (int, string) {
		res, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	code, body := get(base + "/?roots=1")
	// 20 orders and the demo's 2 deliveries (one per ten orders).
	if code != http.StatusOK || !strings.Contains(body, `id="total">22<`) || !strings.Contains(body, "order-00000") {
		t.Fatalf("list: %d\n%.2000s", code, body)
	}
	code, body = get(base + "/execution?id=order-00000")
	if code != http.StatusOK || !strings.Contains(body, `id="chart-src"`) || !strings.Contains(body, "class ") {
		t.Fatalf("execution: %d\n%.2000s", code, body)
	}
	res, err := http.Post(base+"/control", "application/x-www-form-urlencoded", strings.NewReader("op=cancel&id=order-00000"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("a POST without its CSRF token: %d, want 403", res.StatusCode)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("serve exited %d after SIGINT's context", code)
	}
}
