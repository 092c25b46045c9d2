package console

import (
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/memstore"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/pgstore"
	"github.com/steadhq/stead/schedule"
	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/sqlitestore"
	"github.com/steadhq/stead/transport/memtransport"
	"github.com/steadhq/stead/worker"
)

// scheduleStores are the backends the schedule pages are tested on.
var scheduleStores = []struct {
	name string
	open func(t *testing.T) *stead.Store
}{
	{"memory", func(t *testing.T) *stead.Store {
		st := memstore.New()
		t.Cleanup(func() { st.Close() })
		return st
	}},
	{"sqlite", func(t *testing.T) *stead.Store {
		db, err := sqlitedb.Open(t.Context(), sqlitedb.Config{Path: filepath.Join(t.TempDir(), "stead.db")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		st, err := sqlitestore.New(t.Context(), db)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() }) // before the database: cleanups run last in, first out
		return st
	}},
	{"postgres", func(t *testing.T) *stead.Store {
		pool := pgdbtest.Pool(t)
		name := pgdbtest.NewName(t)
		t.Cleanup(func() { pgdbtest.Drop(t, pool, name) })
		st, err := pgstore.New(t.Context(), pool, pgstore.WithSchema(name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}},
}

// tickAt is the tick of "tick" that newScheduleFixture fires: its first after seedAt.
var tickAt = seedAt.Add(time.Minute)

// newScheduleFixture is a console over st with three schedules: "nightly" (a cron expression in
// a zone, never fired), "tick" (every minute, its first tick fired, and ticks enough to page
// its executions), "tick@x" (paused; its executions share the prefix "tick@") and "zz-paused".
func newScheduleFixture(t *testing.T, st *stead.Store, cfg Config) (*fixture, *schedule.Store) {
	t.Helper()
	ctx := t.Context()
	tr := memtransport.New()
	t.Cleanup(func() { tr.Close() })
	f := &fixture{t: t, store: st, client: &worker.Client{Store: st, Transport: tr}}
	cfg.Store = st
	if cfg.Control == nil && !cfg.ReadOnly {
		cfg.Control = f.client
	}
	cfg.Poll = 10 * time.Millisecond
	var err error
	if f.srv, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.srv.Close)
	scheds, err := schedule.For(st)
	if err != nil {
		t.Fatal(err)
	}
	scheds.Clock = func() time.Time { return seedAt }
	for _, sc := range []schedule.Schedule{
		{ID: "nightly", DefinitionID: "report", Cron: "0 3 * * *", TimeZone: "Europe/Paris", Context: []byte(`{"scope":"all"}`)},
		{ID: "tick", DefinitionID: "order", Every: time.Minute, Jitter: time.Second, Overlap: schedule.AllowAll},
		{ID: "tick@x", DefinitionID: "order", Every: time.Hour, Paused: true},
		{ID: "zz-paused", DefinitionID: "order", Every: time.Hour, Paused: true},
	} {
		if _, err := scheds.Create(ctx, sc); err != nil {
			t.Fatal(err)
		}
	}
	// Ticks of "tick" before the one it fired (a backfill's), the one it fired, and an
	// execution of "tick@x".
	for i := 24; i >= 0; i-- {
		id := schedule.ExecutionID("tick", tickAt.Add(-time.Duration(i)*time.Minute))
		if _, err := st.Save(ctx, &stead.Execution{ID: id, DefinitionID: "order", Status: stead.StatusRunning,
			ActivePath: "awaiting_payment", CreatedAt: seedAt, UpdatedAt: seedAt}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Save(ctx, &stead.Execution{ID: schedule.ExecutionID("tick@x", seedAt), DefinitionID: "order",
		Status: stead.StatusDone, CreatedAt: seedAt, UpdatedAt: seedAt}); err != nil {
		t.Fatal(err)
	}
	ok, err := scheds.Claim(ctx, "tick", tickAt, schedule.Advance{NextTick: tickAt.Add(time.Minute), Fired: true,
		LastTick: tickAt, LastExecutionID: schedule.ExecutionID("tick", tickAt)})
	if err != nil || !ok {
		t.Fatalf("claim the first tick: %v %v", ok, err)
	}
	return f, scheds
}

func TestSchedulesPage(t *testing.T) {
	for _, b := range scheduleStores {
		t.Run(b.name, func(t *testing.T) {
			f, _ := newScheduleFixture(t, b.open(t), Config{})
			res, body := f.get("/schedules")
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", res.StatusCode, body)
			}
			row := func(id string) string {
				t.Helper()
				m := regexp.MustCompile(`(?s)<tr>\s*<td><a class="schedule" href="/schedule\?id=` + regexp.QuoteMeta(url.QueryEscape(id)) + `">.*?</tr>`).FindString(body)
				if m == "" {
					t.Fatalf("no row of %s:\n%s", id, body)
				}
				return m
			}
			for _, tc := range []struct {
				id   string
				want []string
			}{
				// 03:00 in Paris on the day after seedAt is 01:00 UTC (summer time).
				{"nightly", []string{">report<", "<code>0 3 * * * (Europe/Paris)</code>", ">skip<", ">active<",
					`class="next-tick">2026-07-02 01:00:00.000Z<`}},
				{"tick", []string{">order<", "<code>every 1m0s</code>", "jitter 1s", ">allow_all<",
					`class="next-tick">2026-07-01 12:02:00.000Z<`, "<td>2026-07-01 12:01:00.000Z</td>",
					`<a class="last-exe" href="/execution?id=tick%402026-07-01T12%3A01%3A00Z">tick@2026-07-01T12:01:00Z</a>`}},
				{"zz-paused", []string{`<span class="badge">paused</span>`, `class="next-tick"><span class="muted">—`}},
			} {
				r := row(tc.id)
				for _, w := range tc.want {
					if !strings.Contains(r, w) {
						t.Errorf("row of %s lacks %q:\n%s", tc.id, w, r)
					}
				}
			}
			if strings.Contains(row("nightly"), "last-exe") {
				t.Error("a schedule that never fired links a last execution")
			}
			if !strings.Contains(body, `id="nav-schedules" href="/schedules"`) {
				t.Error("no nav link to the schedules")
			}
			if _, body := f.get("/"); !strings.Contains(body, `id="nav-schedules"`) {
				t.Error("the executions list has no link to the schedules")
			}

			// Paged one at a time, every schedule once, in id order.
			var seen []string
			next := "/schedules?limit=1"
			for pages := 0; next != ""; pages++ {
				if pages > 5 {
					t.Fatal("paging does not end")
				}
				res, body := f.get(next)
				if res.StatusCode != http.StatusOK {
					t.Fatalf("%s: status %d: %s", next, res.StatusCode, body)
				}
				for _, m := range regexp.MustCompile(`class="schedule" href="/schedule\?id=([^"]+)"`).FindAllStringSubmatch(body, -1) {
					id, _ := url.QueryUnescape(m[1])
					seen = append(seen, id)
				}
				next = ""
				if m := regexp.MustCompile(`href="([^"]+)" id="next"`).FindStringSubmatch(body); m != nil {
					next = strings.ReplaceAll(m[1], "&amp;", "&")
				}
			}
			if got := strings.Join(seen, " "); got != "nightly tick tick@x zz-paused" {
				t.Errorf("pages listed %s", got)
			}
		})
	}
}

func TestSchedulePage(t *testing.T) {
	for _, b := range scheduleStores {
		t.Run(b.name, func(t *testing.T) {
			f, _ := newScheduleFixture(t, b.open(t), Config{})
			res, body := f.get("/schedule?id=tick")
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", res.StatusCode, body)
			}
			for _, w := range []string{
				`<code id="timing">every 1m0s</code>`, `id="overlap">allow_all<`, `id="next-tick">2026-07-01 12:02:00.000Z<`,
				`id="last-tick">2026-07-01 12:01:00.000Z<`,
				`<a id="last-exe" href="/execution?id=tick%402026-07-01T12%3A01%3A00Z">tick@2026-07-01T12:01:00Z</a>`,
				`id="last-status">running<`,
				`href="/?prefix=tick%40" id="all-executions"`, `id="op-pause"`, `id="op-trigger"`,
			} {
				if !strings.Contains(body, w) {
					t.Errorf("page lacks %q", w)
				}
			}
			if strings.Contains(body, `id="op-resume"`) {
				t.Error("an active schedule offers resume")
			}
			// Its 25 executions over two pages, in tick order, without those of "tick@x".
			var seen []string
			next := "/schedule?id=tick"
			for pages := 0; next != ""; pages++ {
				if pages > 3 {
					t.Fatal("paging does not end")
				}
				res, body := f.get(next)
				if res.StatusCode != http.StatusOK {
					t.Fatalf("%s: status %d: %s", next, res.StatusCode, body)
				}
				for _, m := range regexp.MustCompile(`class="exe" href="/execution\?id=([^"]+)"`).FindAllStringSubmatch(body, -1) {
					id, _ := url.QueryUnescape(m[1])
					seen = append(seen, id)
				}
				next = ""
				if m := regexp.MustCompile(`href="([^"]+)" id="next"`).FindStringSubmatch(body); m != nil {
					next = strings.ReplaceAll(m[1], "&amp;", "&")
				}
			}
			var want []string
			for i := 24; i >= 0; i-- {
				want = append(want, schedule.ExecutionID("tick", tickAt.Add(-time.Duration(i)*time.Minute)))
			}
			if !slices.Equal(seen, want) {
				t.Errorf("pages listed\n%v\nwant\n%v", seen, want)
			}

			_, body = f.get("/schedule?id=nightly")
			for _, w := range []string{`<code id="timing">0 3 * * * (Europe/Paris)</code>`, `id="last-tick"><span class="muted">none yet`,
				`id="no-executions"`, "&#34;scope&#34;: &#34;all&#34;"} {
				if !strings.Contains(body, w) {
					t.Errorf("nightly's page lacks %q", w)
				}
			}
			_, body = f.get("/schedule?id=tick%40x")
			if !strings.Contains(body, `id="op-resume"`) || strings.Contains(body, `id="op-pause"`) || !strings.Contains(body, `id="paused"`) {
				t.Error("a paused schedule's page does not offer resume alone")
			}
			if !strings.Contains(body, "tick@x@2026-07-01T12:00:00Z") {
				t.Error("tick@x's page lacks its execution")
			}
		})
	}
}

func TestScheduleBadRequests(t *testing.T) {
	for _, b := range scheduleStores {
		t.Run(b.name, func(t *testing.T) {
			f, _ := newScheduleFixture(t, b.open(t), Config{})
			// A cursor of another listing: the store's MAC binds it to its filter.
			page, err := f.store.List(t.Context(), stead.ListFilter{Limit: 1})
			if err != nil || page.NextCursor == "" {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				name, target string
				status       int
				say          string
			}{
				{"no id", "/schedule", 400, "no schedule id"},
				{"unknown id", "/schedule?id=nope", 404, "no such schedule"},
				{"nul in id", "/schedule?id=a%00b", 400, "refused"},
				{"garbage cursor", "/schedule?id=tick&cursor=abc", 400, "cursor"},
				{"cursor of another filter", "/schedule?id=tick&cursor=" + url.QueryEscape(page.NextCursor), 400, "cursor"},
				{"bad limit", "/schedules?limit=0", 400, "limit"},
				{"huge limit", "/schedules?limit=100000", 400, "limit"},
				{"nul in after", "/schedules?after=a%00", 400, "refused"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					res, body := f.get(tc.target)
					if res.StatusCode != tc.status {
						t.Fatalf("status %d, want %d: %s", res.StatusCode, tc.status, body)
					}
					if !strings.Contains(body, tc.say) {
						t.Errorf("page does not say %q: %s", tc.say, body)
					}
				})
			}
		})
	}
}

// scheduleCSRF gets a schedule's page and returns its CSRF cookie and the token its forms carry.
func (f *fixture) scheduleCSRF() (*http.Cookie, string) {
	f.t.Helper()
	res, body := f.get("/schedule?id=tick")
	var c *http.Cookie
	for _, k := range res.Cookies() {
		if k.Name == csrfCookie {
			c = k
		}
	}
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(body)
	if c == nil || m == nil {
		f.t.Fatalf("no CSRF cookie or token on the page (status %d)", res.StatusCode)
	}
	return c, m[1]
}

func TestScheduleControl(t *testing.T) {
	for _, b := range scheduleStores {
		t.Run(b.name, func(t *testing.T) {
			f, scheds := newScheduleFixture(t, b.open(t), Config{})
			ctx := t.Context()
			cookie, token := f.scheduleCSRF()
			form := func(op, id, tok string) url.Values { return url.Values{"op": {op}, "id": {id}, "csrf": {tok}} }
			get := func(id string) *schedule.Schedule {
				t.Helper()
				sc, err := scheds.Get(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				return sc
			}
			executions := func() int {
				t.Helper()
				p, err := f.store.List(ctx, stead.ListFilter{Limit: stead.MaxListLimit})
				if err != nil {
					t.Fatal(err)
				}
				return len(p.Items)
			}
			before, exes := get("tick"), executions()

			crossSite := postForm("/schedule", form("pause", "tick", token), cookie)
			crossSite.Header.Set("Sec-Fetch-Site", "cross-site")
			for _, tc := range []struct {
				name string
				req  *http.Request
			}{
				{"no token", postForm("/schedule", form("pause", "tick", ""), cookie)},
				{"no cookie", postForm("/schedule", form("pause", "tick", token))},
				{"forged token", postForm("/schedule", form("pause", "tick", strings.Repeat("0", 64)), cookie)},
				{"cross-site", crossSite},
			} {
				if res, _ := f.do(tc.req); res.StatusCode != http.StatusForbidden {
					t.Errorf("%s: status %d, want 403", tc.name, res.StatusCode)
				}
			}
			for _, tc := range []struct {
				name   string
				form   url.Values
				status int
				say    string
			}{
				{"unknown op", form("delete", "tick", token), 400, "unknown command"},
				{"no id", form("pause", "", token), 400, "no schedule id"},
				{"unknown id", form("pause", "nope", token), 404, "no such schedule"},
				{"unknown id to resume", form("resume", "nope", token), 404, "no such schedule"},
				{"unknown id to trigger", form("trigger", "nope", token), 404, "no such schedule"},
				{"nul in id", form("trigger", "ti\x00ck", token), 400, "refused"},
			} {
				res, body := f.do(postForm("/schedule", tc.form, cookie))
				if res.StatusCode != tc.status || !strings.Contains(body, tc.say) {
					t.Errorf("%s: status %d, want %d saying %q: %s", tc.name, res.StatusCode, tc.status, tc.say, body)
				}
			}
			if after := get("tick"); after.Version != before.Version || after.Paused {
				t.Fatalf("a refused request wrote the schedule: %+v", after)
			}
			if n := executions(); n != exes {
				t.Fatalf("a refused request started executions: %d, then %d", exes, n)
			}
			if scs, err := scheds.List(ctx, "", 0); err != nil || len(scs) != 4 {
				t.Fatalf("a refused request changed the schedules: %d, %v", len(scs), err)
			}

			same := postForm("/schedule", form("pause", "tick", token), cookie)
			same.Header.Set("Origin", "http://example.com") // httptest's host
			same.Header.Set("Sec-Fetch-Site", "same-origin")
			res, body := f.do(same)
			if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/schedule?id=tick" {
				t.Fatalf("pause: status %d %s: %s", res.StatusCode, res.Header.Get("Location"), body)
			}
			if !get("tick").Paused {
				t.Fatal("not paused")
			}
			if _, body := f.get("/schedule?id=tick"); !strings.Contains(body, `id="op-resume"`) || strings.Contains(body, `id="op-pause"`) {
				t.Error("a paused schedule's page does not offer resume alone")
			}
			if res, _ := f.do(postForm("/schedule", form("resume", "tick", token), cookie)); res.StatusCode != http.StatusSeeOther {
				t.Fatalf("resume: status %d", res.StatusCode)
			}
			if get("tick").Paused {
				t.Fatal("still paused")
			}

			res, body = f.do(postForm("/schedule", form("trigger", "tick", token), cookie))
			loc := res.Header.Get("Location")
			if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/execution?id=tick%40manual-") {
				t.Fatalf("trigger: status %d %s: %s", res.StatusCode, loc, body)
			}
			u, _ := url.Parse(loc)
			exe, err := f.store.Load(ctx, u.Query().Get("id"))
			if err != nil || exe.DefinitionID != "order" {
				t.Fatalf("the triggered execution: %v %v", exe, err)
			}
			if sc := get("tick"); sc.LastExecutionID != schedule.ExecutionID("tick", tickAt) {
				t.Errorf("trigger moved the last execution to %s", sc.LastExecutionID)
			}
		})
	}
}

func TestScheduleReadOnly(t *testing.T) {
	f, scheds := newScheduleFixture(t, memstore.New(), Config{ReadOnly: true})
	t.Cleanup(func() { f.store.Close() })
	_, body := f.get("/schedule?id=tick")
	if strings.Contains(body, `id="controls"`) || strings.Contains(body, `action="/schedule"`) {
		t.Error("a read-only console shows the schedule's buttons")
	}
	// The page has no form; a token made with the console's own secret is still refused.
	c := &http.Cookie{Name: csrfCookie, Value: strings.Repeat("b", 32)}
	tok := f.srv.mac("csrf", c.Value)
	for _, op := range scheduleOps {
		res, _ := f.do(postForm("/schedule", url.Values{"op": {op}, "id": {"tick"}, "csrf": {tok}}, c))
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("%s in read-only: status %d, want 403", op, res.StatusCode)
		}
	}
	if sc, _ := scheds.Get(t.Context(), "tick"); sc.Paused || sc.Version != 2 {
		t.Errorf("read-only buttons wrote the schedule: paused %v, version %d", sc.Paused, sc.Version)
	}
}

// TestSchedulesUnavailable: on a store whose backend keeps no schedules the pages say so, with
// no 500.
func TestSchedulesUnavailable(t *testing.T) {
	f := newFixture(t, Config{})
	srv, err := New(Config{Store: stead.NewStore(plainBackend{f.store.Backend()}), Control: f.client, Poll: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	f.srv = srv
	const say = "schedules are not available on this backend"
	res, body := f.get("/schedules")
	if res.StatusCode != http.StatusOK || !strings.Contains(body, `id="no-schedules"`) || !strings.Contains(body, say) {
		t.Errorf("/schedules: status %d: %s", res.StatusCode, body)
	}
	res, body = f.get("/schedule?id=tick")
	if res.StatusCode != http.StatusNotFound || !strings.Contains(body, say) {
		t.Errorf("/schedule: status %d: %s", res.StatusCode, body)
	}
	cookie, token := f.csrf()
	res, body = f.do(postForm("/schedule", url.Values{"op": {"pause"}, "id": {"tick"}, "csrf": {token}}, cookie))
	if res.StatusCode != http.StatusNotFound || !strings.Contains(body, say) {
		t.Errorf("POST /schedule: status %d: %s", res.StatusCode, body)
	}
}

// TestScheduleUnderPrefix: mounted under a prefix, the schedule pages' links and redirects carry it.
func TestScheduleUnderPrefix(t *testing.T) {
	st := memstore.New()
	t.Cleanup(func() { st.Close() })
	f, scheds := newScheduleFixture(t, st, Config{Prefix: "/stead"})
	_, body := f.get("/stead/schedules")
	for _, w := range []string{`id="nav-schedules" href="/stead/schedules"`, `href="/stead/schedule?id=tick"`,
		`class="last-exe" href="/stead/execution?id=tick%402026-07-01T12%3A01%3A00Z"`} {
		if !strings.Contains(body, w) {
			t.Errorf("list lacks %q", w)
		}
	}
	res, body := f.get("/stead/schedule?id=tick")
	if res.StatusCode != http.StatusOK || !strings.Contains(body, `action="/stead/schedule"`) || !strings.Contains(body, `href="/stead/?prefix=tick%40"`) {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	var c *http.Cookie
	for _, k := range res.Cookies() {
		if k.Name == csrfCookie {
			c = k
		}
	}
	tok := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(body)[1]
	res, _ = f.do(postForm("/stead/schedule", url.Values{"op": {"pause"}, "id": {"tick"}, "csrf": {tok}}, c))
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/stead/schedule?id=tick" {
		t.Fatalf("pause: status %d, location %s", res.StatusCode, res.Header.Get("Location"))
	}
	if sc, _ := scheds.Get(t.Context(), "tick"); !sc.Paused {
		t.Error("not paused")
	}
}

// TestScheduleTriggerNeedsAClient: with a controller of the caller's, which creates no
// executions, pause and resume are offered and trigger is not, and is refused.
func TestScheduleTriggerNeedsAClient(t *testing.T) {
	st := memstore.New()
	t.Cleanup(func() { st.Close() })
	f, _ := newScheduleFixture(t, st, Config{Control: refuser{}})
	_, body := f.get("/schedule?id=tick")
	if !strings.Contains(body, `id="op-pause"`) || strings.Contains(body, `id="op-trigger"`) {
		t.Error("the page does not offer pause alone")
	}
	cookie, token := f.scheduleCSRF()
	before, _ := st.List(t.Context(), stead.ListFilter{Limit: stead.MaxListLimit})
	res, _ := f.do(postForm("/schedule", url.Values{"op": {"trigger"}, "id": {"tick"}, "csrf": {token}}, cookie))
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("trigger: status %d, want 403", res.StatusCode)
	}
	if after, _ := st.List(t.Context(), stead.ListFilter{Limit: stead.MaxListLimit}); len(after.Items) != len(before.Items) {
		t.Errorf("a refused trigger started an execution: %d, then %d", len(before.Items), len(after.Items))
	}
}
