package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/bulk"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/sqlitestore"
	"github.com/steadhq/stead/transport/sqlitetransport"
	"github.com/steadhq/stead/worker"
)

// chromium finds the browser: Debian's package, or whatever STEAD_CHROMIUM names. The test
// skips without one unless STEAD_REQUIRE_BROWSER is set (CI sets it), when it fails.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("STEAD_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("STEAD_REQUIRE_BROWSER") != "" {
		t.Fatal("no chromium found and STEAD_REQUIRE_BROWSER is set (apt-get install -y chromium)")
	}
	t.Skip("no chromium found (apt-get install -y chromium); set STEAD_REQUIRE_BROWSER=1 to fail instead")
	return ""
}

// TestBrowser drives a headless Chromium through the console over a real SQLite store with a
// worker running: it opens the list, filters it, opens an execution by clicking it, sees the
// chart drawn as an SVG with the active state marked, and sees page and chart follow the
// execution when the worker advances it. With STEAD_CONSOLE_SCREENSHOTS=<dir> it saves the
// list and the execution as PNGs there (docs/ holds the README's).
func TestBrowser(t *testing.T) {
	browser := chromium(t)
	ctx, stop := context.WithTimeout(t.Context(), 3*time.Minute)
	defer stop()

	db, err := sqlitedb.Open(ctx, sqlitedb.Config{Path: filepath.Join(t.TempDir(), "console.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, err := sqlitestore.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tr, err := sqlitetransport.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	// The sample order flow with a payment timeout long enough that the test, not the timer,
	// decides when the watched order moves on.
	src := bytes.Replace(chart.SampleOrderFlowYAML(), []byte("after: 5s"), []byte("after: 1h"), 1)
	def, err := chart.Parse("order.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	engine, err := chart.NewEngine(def, chart.RegisterSampleActions(chart.NewRegistry()), chart.WithTrace())
	if err != nil {
		t.Fatal(err)
	}
	machines := worker.Machines{def.ID: engine}
	bulk.Register(machines, st, tr, bulk.Options{}) // the console's bulk jobs run here
	w, err := worker.New(worker.Config{Store: st, Transport: tr, Machines: machines})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stopWorker := context.WithCancel(ctx)
	workerDone := make(chan error, 1)
	go func() { workerDone <- w.Run(wctx) }()
	defer func() {
		stopWorker()
		if err := <-workerDone; err != nil && ctx.Err() == nil && !strings.Contains(err.Error(), "context canceled") {
			t.Errorf("worker: %v", err)
		}
	}()
	client := &worker.Client{Store: st, Transport: tr, Known: machines}

	// Orders that finish on their own, every outcome, and one that waits for its payment.
	outcomes := []string{"ok", "ok", "ok", "ok", "declined", "error", "out_of_stock", "crash", "ok", "ok"}
	for i, o := range outcomes {
		data, _ := json.Marshal(map[string]any{"order_id": fmt.Sprintf("o-%d", i), "amount": 120, "outcome": o})
		if _, err := client.Create(ctx, def.ID, fmt.Sprintf("order-%03d", i), data); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.Create(ctx, def.ID, "order-live", json.RawMessage(`{"order_id":"o-live","amount":120,"outcome":"timeout"}`)); err != nil {
		t.Fatal(err)
	}
	settled := func() bool {
		c, err := st.Count(ctx, stead.ListFilter{Statuses: []stead.Status{stead.StatusPending, stead.StatusRunning}})
		if err != nil {
			t.Fatal(err)
		}
		live, err := st.Load(ctx, "order-live")
		return err == nil && c.Total == 1 && live.ActivePath == "awaiting_payment"
	}
	for !settled() {
		if ctx.Err() != nil {
			t.Fatal("the orders did not settle")
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Mounted as a program of one's own mounts it: under a prefix of a larger server, with the
	// machines it may retry, so that the links, the script's fetches and its event stream are
	// followed through the prefix by a real browser.
	srv, err := New(Config{Store: st, Transport: tr, Machines: machines, Prefix: "/stead", Poll: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/stead/", srv)
	ts := httptest.NewServer(mux)
	defer ts.Close()
	defer srv.Close()

	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.WindowSize(1400, 1100),
		chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	shots := os.Getenv("STEAD_CONSOLE_SCREENSHOTS")
	shot := func(name string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			if shots == "" {
				return nil
			}
			png, err := chromedp.FullScreenshot(100)(ctx, tg)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(shots, name), png, 0o644)
		})
	}
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return strings.TrimSpace(v)
	}
	eval := func(js string) []string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return v
	}

	// The list: every execution, roots and region children.
	do("open the list", chromedp.Navigate(ts.URL+"/stead/"), chromedp.WaitVisible(chromedp.CSS("#executions")))
	all, err := st.Count(ctx, stead.ListFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if total := text("#total"); total != fmt.Sprint(all.Total) {
		t.Errorf("the list counts %s executions, the store %d", total, all.Total)
	}
	do("screenshot the list", shot("console-list.png"))

	// Filter: running roots, by ticking the boxes and pressing Filter.
	// The old page is marked, so that the wait below is for the page the filter loads.
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.body.dataset.old = "1"`)); err != nil {
		t.Fatal(err)
	}
	do("filter",
		chromedp.Click(chromedp.CSS(`input[name="status"][value="running"]`)),
		chromedp.Click(chromedp.CSS(`input[name="roots"]`)),
		chromedp.Click(chromedp.CSS("#apply")),
		chromedp.WaitVisible(chromedp.CSS(`body:not([data-old]) #executions`)),
	)
	location, err := chromedp.Run(bctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(location, "status=running") || !strings.Contains(location, "roots=1") {
		t.Errorf("the filter's address is %s", location)
	}
	if rows := eval(`[...document.querySelectorAll("a.exe")].map(a => a.textContent)`); !slices.Equal(rows, []string{"order-live"}) {
		t.Fatalf("running roots listed %v, want [order-live]", rows)
	}

	// Open it by clicking, and see the chart with its active state.
	do("open the execution",
		chromedp.Click(chromedp.CSS("a.exe")),
		chromedp.WaitVisible(chromedp.CSS("#chart svg")),
		chromedp.WaitVisible(chromedp.CSS("#live.on")),
	)
	if status, active := text("#status"), eval(activeLabels); status != "running" || !slices.Equal(active, []string{"awaiting_payment"}) {
		svg, _ := chromedp.Run(bctx, chromedp.OuterHTML(chromedp.CSS("#chart svg")))
		t.Fatalf("status %q, chart marks %v; want running with awaiting_payment marked\n%.3000s", status, active, svg)
	}
	do("screenshot the execution", shot("console-execution.png"))

	// The worker advances it: payment arrives, fulfilment runs its regions, the order ships.
	if _, err := client.Send(ctx, "order-live", stead.Event{Kind: "payment_received", Data: json.RawMessage(`{"amount":120}`)}); err != nil {
		t.Fatal(err)
	}
	do("follow the execution",
		chromedp.WaitVisible(chromedp.CSS(`#state[data-status="done"]`)),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Poll[chromedp.Void](`document.getElementById("detail").dataset.chartVersion === document.getElementById("state").dataset.version`)(ctx, tg)
			return err
		}),
	)
	exe, err := st.Load(ctx, "order-live")
	if err != nil {
		t.Fatal(err)
	}
	if final := text("#active"); final != exe.ActivePath || exe.ActivePath != "shipped" {
		t.Errorf("the page shows %q, the store %q; want shipped", final, exe.ActivePath)
	}
	if active := eval(activeLabels); !slices.Equal(active, []string{"shipped"}) {
		t.Errorf("after shipping the chart marks %v, want [shipped]", active)
	}
	do("screenshot the shipped execution", shot("console-execution-done.png"))

	// A failed order offers retry: the console has the order flow's machine.
	now := time.Now()
	if _, err := st.Commit(ctx, &stead.Execution{ID: "order-failed", DefinitionID: def.ID, Status: stead.StatusFailed,
		ActivePath: "awaiting_payment", Error: "card processor down", CreatedAt: now, UpdatedAt: now, FinishedAt: now,
		DeadLetter: &stead.DeadLetter{Event: stead.Event{ID: "ev-pay", Kind: "payment_received"}, Status: stead.StatusRunning,
			ActivePath: "awaiting_payment"}}, stead.Bundle{}); err != nil {
		t.Fatal(err)
	}
	do("open a failed order",
		chromedp.Navigate(ts.URL+"/stead/execution?id=order-failed"),
		chromedp.WaitVisible(chromedp.CSS("#dead-letter")),
		chromedp.WaitVisible(chromedp.CSS("#op-retry")),
	)
	do("retry it",
		chromedp.Click(chromedp.CSS("#op-retry")),
		chromedp.WaitVisible(chromedp.CSS(`#state:not([data-status="failed"])`)),
	)
	if loc, err := chromedp.Run(bctx, chromedp.Location()); err != nil || !strings.HasSuffix(loc, "/stead/execution?id=order-failed") {
		t.Errorf("after retry the browser is at %q (%v), want the order's page under the prefix", loc, err)
	}

	// Attributes: three orders of one batch, found by typing the condition into the filter, and
	// cancelled by a bulk job started from it after its confirmation, which a worker carries out.
	var batch []worker.NewExecution
	for i := range 3 {
		batch = append(batch, worker.NewExecution{DefinitionID: def.ID, ID: fmt.Sprintf("batch-%d", i),
			Context:    json.RawMessage(fmt.Sprintf(`{"order_id":"b-%d","amount":120,"outcome":"timeout"}`, i)),
			Attributes: map[string]stead.AttrValue{"batch": stead.AttrString("b1")}})
	}
	if _, err := client.CreateBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	do("open the list again", chromedp.Navigate(ts.URL+"/stead/"), chromedp.WaitVisible(chromedp.CSS("#executions")))
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.body.dataset.old = "1"`)); err != nil {
		t.Fatal(err)
	}
	do("filter by attribute",
		chromedp.SetValue(chromedp.CSS(`input[name="where"]`), `batch="b1"`),
		chromedp.Click(chromedp.CSS("#apply")),
		chromedp.WaitVisible(chromedp.CSS(`body:not([data-old]) #executions`)),
	)
	if rows := eval(`[...document.querySelectorAll("a.exe")].map(a => a.textContent)`); !slices.Equal(rows, []string{"batch-0", "batch-1", "batch-2"}) {
		t.Fatalf("batch=b1 listed %v", rows)
	}
	do("confirm a bulk cancel",
		chromedp.Click(chromedp.CSS("#bulk-cancel")),
		chromedp.WaitVisible(chromedp.CSS("#bulk-confirm")),
	)
	if n := text("#matched"); n != "3" {
		t.Fatalf("the confirmation counts %s, want 3", n)
	}
	do("start the bulk cancel",
		chromedp.Click(chromedp.CSS("#bulk-confirm")),
		chromedp.WaitVisible(chromedp.CSS(`#state[data-status="done"]`)), // the job's page, live
	)
	for _, b := range batch {
		if exe, err := st.Load(ctx, b.ID); err != nil || exe.Status != stead.StatusCancelled {
			t.Errorf("%s after the bulk cancel: %v (%v)", b.ID, exe.Status, err)
		}
	}
}

// activeLabels is the script that reads which states the drawn chart marks active: the labels
// of the SVG's nodes that carry the classDef's class.
const activeLabels = `[...document.querySelectorAll("#chart svg .active")].map(n => n.textContent.trim()).filter(s => s).sort()`
