package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/memstore"
	"github.com/steadhq/stead/transport/memtransport"
	"github.com/steadhq/stead/worker"
)

// fixture is a console over a memstore seeded with a small order flow: a running root with a
// timer, a pending emit, a trace and a region child; a failed root with its dead letter; a done
// one; and enough others to page.
type fixture struct {
	t      *testing.T
	store  *stead.Store
	srv    *Server
	client *worker.Client
}

func newFixture(t *testing.T, cfg Config) *fixture {
	t.Helper()
	st := memstore.New()
	t.Cleanup(func() { st.Close() })
	tr := memtransport.New()
	t.Cleanup(func() { tr.Close() })
	def, err := chart.SampleOrderFlow()
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, store: st}
	f.client = &worker.Client{Store: st, Transport: tr}
	if cfg.Store == nil {
		cfg.Store = st
	}
	switch {
	case cfg.Control == nil && !cfg.ReadOnly && cfg.Machines != nil:
		cfg.Transport = tr // the console builds its client over the machines
	case cfg.Control == nil && !cfg.ReadOnly:
		cfg.Control = f.client
	}
	if cfg.Definitions == nil {
		cfg.Definitions = map[string]*chart.Definition{def.ID: def}
	}
	if cfg.Poll == 0 {
		cfg.Poll = 10 * time.Millisecond
	}
	f.srv, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.srv.Close)
	f.seed()
	return f
}

var seedAt = time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)

func (f *fixture) seed() {
	ctx := f.t.Context()
	commit := func(exe *stead.Execution, b stead.Bundle) {
		f.t.Helper()
		c, err := f.store.Commit(ctx, exe, b)
		if err != nil {
			f.t.Fatal(err)
		}
		exe.Version = c.Version
	}
	run := &stead.Execution{ID: "order-1", DefinitionID: "order", Status: stead.StatusRunning,
		ActivePath: "fulfilment", Context: json.RawMessage(`{"amount":42,"customer":"<b>ann</b>"}`),
		Attributes: map[string]stead.AttrValue{"customer": stead.AttrInt(42), "tier": stead.AttrString("gold & <b>")},
		Children:   map[string]stead.ChildState{"order-1:fulfilment.packing:0": {RootPath: "fulfilment.packing", Key: "packing"}},
		CreatedAt:  seedAt, UpdatedAt: seedAt}
	commit(run, stead.Bundle{
		Timers: []stead.TimerOp{{Action: stead.TimerSchedule, Path: "fulfilment", FireAt: seedAt.Add(time.Hour)}},
		Emits:  []stead.Emit{{Target: "order-9", Event: stead.Event{ID: "ev-note", Kind: "noted", CreatedAt: seedAt}}},
		Trace:  &stead.TraceStep{EventID: "start-1", EventKind: "paid", From: "awaiting_payment", To: "fulfilment", Actions: []string{"reserve"}, At: seedAt},
	})
	child := &stead.Execution{ID: "order-1:fulfilment.packing:0", DefinitionID: "order", Status: stead.StatusRunning,
		ActivePath: "fulfilment.packing.picking", ParentID: "order-1", ChildID: "packing", RootPath: "fulfilment.packing",
		CreatedAt: seedAt, UpdatedAt: seedAt}
	commit(child, stead.Bundle{})
	failed := &stead.Execution{ID: "order-2", DefinitionID: "order", Status: stead.StatusFailed, ActivePath: "awaiting_payment",
		Error: "action \"charge\": card declined", CreatedAt: seedAt, UpdatedAt: seedAt, FinishedAt: seedAt,
		Attributes: map[string]stead.AttrValue{"customer": stead.AttrInt(42)},
		DeadLetter: &stead.DeadLetter{Event: stead.Event{ID: "ev-pay", Kind: "pay", Data: json.RawMessage(`{"card":"x"}`)},
			Status: stead.StatusRunning, ActivePath: "awaiting_payment"}}
	commit(failed, stead.Bundle{})
	done := &stead.Execution{ID: "order-3", DefinitionID: "order", Status: stead.StatusDone, Outcome: "success",
		ActivePath: "shipped", CreatedAt: seedAt, UpdatedAt: seedAt, FinishedAt: seedAt,
		Attributes: map[string]stead.AttrValue{"customer": stead.AttrInt(7)}}
	commit(done, stead.Bundle{})
	for i := range 5 {
		commit(&stead.Execution{ID: fmt.Sprintf("other-%d", i), DefinitionID: "other", Status: stead.StatusRunning,
			CreatedAt: seedAt.Add(time.Duration(i) * time.Hour), UpdatedAt: seedAt}, stead.Bundle{})
	}
}

// do sends a request through the console and returns the response and its body.
func (f *fixture) do(r *http.Request) (*http.Response, string) {
	f.t.Helper()
	w := httptest.NewRecorder()
	f.srv.ServeHTTP(w, r)
	res := w.Result()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func (f *fixture) get(target string) (*http.Response, string) {
	f.t.Helper()
	return f.do(httptest.NewRequest(http.MethodGet, target, nil))
}

// csrf gets a page and returns its CSRF cookie and the token its forms carry.
func (f *fixture) csrf() (*http.Cookie, string) {
	f.t.Helper()
	res, body := f.get("/execution?id=order-1")
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

func postForm(target string, form url.Values, cookies ...*http.Cookie) *http.Request {
	r := httptest.NewRequest(http.MethodPost, target, strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, c := range cookies {
		r.AddCookie(c)
	}
	return r
}

func TestListPage(t *testing.T) {
	f := newFixture(t, Config{})
	for _, tc := range []struct {
		name, query string
		want, not   []string
	}{
		{"everything", "/", []string{"order-1", "order-2", "order-3", "other-4", `id="total">9<`}, nil},
		{"definition", "/?definition=order", []string{"order-1", "order-3", `id="total">4<`}, []string{"other-0"}},
		{"status", "/?status=failed", []string{"order-2", `id="total">1<`}, []string{"order-1<", "order-3"}},
		{"statuses", "/?status=done&status=failed", []string{"order-2", "order-3", `id="total">2<`}, []string{"order-1<"}},
		{"roots", "/?roots=1&definition=order", []string{"order-1", `id="total">3<`}, []string{"fulfilment.packing:0"}},
		{"prefix", "/?prefix=other-", []string{"other-0", `id="total">5<`}, []string{"order-1"}},
		{"created window", "/?prefix=other-&created_from=2026-07-01T13:00:00Z&created_before=2026-07-01T15:00",
			[]string{"other-1", "other-2", `id="total">2<`}, []string{"other-0", "other-3"}},
		{"nothing", "/?definition=none", []string{`id="empty"`, `id="total">0<`}, nil},
		{"counts link to their filter", "/?definition=order", []string{`href="/?definition=order&amp;status=failed"`}, nil},
		{"attribute", "/?where=customer%3D42", []string{"order-1", "order-2", `id="total">2<`, `name="where" value="customer=42"`},
			[]string{"order-3", "other-0"}},
		{"attributes and", "/?where=customer%3D42&where=tier+%3D+%22gold+%26+%3Cb%3E%22", []string{"order-1", `id="total">1<`}, []string{"order-2"}},
		{"attribute set", "/?where=customer+in+(7,+42)&where=", []string{"order-1", "order-2", "order-3", `id="total">3<`}, []string{"other-0"}},
		{"attribute and status", "/?where=customer%3E0&status=done", []string{"order-3", `id="total">1<`}, []string{"order-2"}},
		{"counts keep the attributes", "/?where=customer%3D42", []string{`href="/?status=failed&amp;where=customer%3D42"`}, nil},
		{"another kind matches nothing", "/?where=customer%3D%2242%22", []string{`id="empty"`, `id="total">0<`}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, body := f.get(tc.query)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", res.StatusCode, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("page lacks %q", w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(body, n) {
					t.Errorf("page has %q", n)
				}
			}
		})
	}
}

func TestListPaging(t *testing.T) {
	f := newFixture(t, Config{})
	var seen []string
	next := "/?prefix=other-&limit=2"
	for pages := 0; next != ""; pages++ {
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		res, body := f.get(next)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d", next, res.StatusCode)
		}
		for _, m := range regexp.MustCompile(`class="exe" href="/execution\?id=([^"]+)"`).FindAllStringSubmatch(body, -1) {
			seen = append(seen, m[1])
		}
		next = ""
		if m := regexp.MustCompile(`href="([^"]+)" id="next"`).FindStringSubmatch(body); m != nil {
			next = strings.ReplaceAll(m[1], "&amp;", "&")
		}
	}
	if got := strings.Join(seen, " "); got != "other-0 other-1 other-2 other-3 other-4" {
		t.Errorf("pages listed %s", got)
	}
}

func TestBadRequests(t *testing.T) {
	f := newFixture(t, Config{})
	// A cursor of the right shape, signed with another key: what a forger can make.
	page, err := f.store.List(t.Context(), stead.ListFilter{Limit: 1})
	if err != nil || page.NextCursor == "" {
		t.Fatal(err)
	}
	other := memstore.New()
	defer other.Close()
	for i := range 2 {
		if _, err := other.Save(t.Context(), &stead.Execution{ID: fmt.Sprintf("x%d", i), DefinitionID: "d", Status: stead.StatusRunning}); err != nil {
			t.Fatal(err)
		}
	}
	foreign, err := other.List(t.Context(), stead.ListFilter{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, target string
		status       int
		say          string
	}{
		{"unknown status", "/?status=bogus", 400, "unknown status"},
		{"bad time", "/?created_from=yesterday", 400, "created from"},
		{"bad limit", "/?limit=0", 400, "limit"},
		{"huge limit", "/?limit=100000", 400, "limit"},
		{"bad roots", "/?roots=maybe", 400, "roots"},
		{"empty window", "/?created_from=2026-01-02&created_before=2026-01-01", 400, "time window that is empty"},
		{"garbage cursor", "/?cursor=abc", 400, "cursor"},
		{"foreign cursor", "/?limit=1&cursor=" + url.QueryEscape(foreign.NextCursor), 400, "cursor"},
		{"cursor of another filter", "/?limit=1&status=running&cursor=" + url.QueryEscape(page.NextCursor), 400, "cursor"},
		{"cursor without its attributes", "/?limit=1&where=customer%3D42&cursor=" + url.QueryEscape(page.NextCursor), 400, "cursor"},
		{"attribute without comparison", "/?where=customer", 400, "attribute condition &#34;customer&#34;"},
		{"attribute bad key", "/?where=9lives%3D1", 400, "attribute"},
		{"attribute order on a boolean", "/?where=paid%3Etrue", 400, "attribute condition"},
		{"too many attribute conditions", "/?" + strings.Repeat("where=a%3D1&", stead.MaxAttributes+1), 400, "at most 16"},
		{"no id", "/execution", 400, "no execution id"},
		{"nul in id", "/execution?id=a%00b", 400, "invalid"},
		{"unknown id", "/execution?id=nope", 404, "no such execution"},
		{"unknown page", "/nothing-here", 404, ""},
		{"events of unknown id", "/events?id=nope", 404, ""},
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
	// The first page's cursor still works: the refusals above are of the cursors, not of paging.
	if res, _ := f.get("/?limit=1&cursor=" + url.QueryEscape(page.NextCursor)); res.StatusCode != 200 {
		t.Errorf("a genuine cursor: status %d", res.StatusCode)
	}
}

func TestExecutionPage(t *testing.T) {
	f := newFixture(t, Config{})
	res, body := f.get("/execution?id=order-1")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	def, _ := chart.SampleOrderFlow()
	// The chart is the definition's Mermaid with this execution's and its running region
	// child's active states: the same text `stead diagram` prints.
	src := def.Mermaid("fulfilment", "fulfilment.packing.picking")
	if !strings.Contains(body, templateEscape(src)) {
		t.Errorf("the chart source is not the definition's Mermaid with the active states")
	}
	for _, want := range []string{
		`id="chart"`, "class s1 active", // fulfilment
		`data-version="1"`,
		"&#34;amount&#34;: 42", // pretty JSON
		`<code>fulfilment</code></td><td>2026-07-01 13:00`, // the timer
		`<code>noted</code>`, `href="/execution?id=order-9"`, // the pending outbox
		`<code>paid</code>`, `<code>reserve</code>`, // the trace
		`href="/execution?id=order-1%3afulfilment.packing%3a0"`, // the child
		`id="op-suspend"`, `id="op-cancel"`,
		`<a href="/?where=customer%3D42" title="executions with this value">customer</a></td><td>int</td><td><code>42</code>`,
		`<td>string</td><td><code>gold &amp; &lt;b&gt;</code>`, // text, not markup
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(body, "<b>ann") || strings.Contains(body, "gold & <b>") {
		t.Error("the context is markup, not text")
	}
	if strings.Contains(body, `id="op-resume"`) || strings.Contains(body, `id="op-retry"`) {
		t.Error("a running execution offers resume or retry")
	}

	_, body = f.get("/execution?id=order-1%3afulfilment.packing%3a0")
	if !strings.Contains(body, `id="parent" href="/execution?id=order-1"`) {
		t.Error("the child's page does not link its parent")
	}

	_, body = f.get("/execution?id=order-2")
	for _, want := range []string{`id="dead-letter"`, "<code>pay</code>", "&#34;card&#34;: &#34;x&#34;", `id="op-retry"`, "card declined"} {
		if !strings.Contains(body, want) {
			t.Errorf("the failed execution's page lacks %q", want)
		}
	}
	_, body = f.get("/execution?id=order-3")
	if strings.Contains(body, `id="controls"`) {
		t.Error("a done execution offers commands")
	}

	// The fragment the script swaps in is the live part alone.
	res, body = f.get("/execution?id=order-1&fragment=1")
	if res.StatusCode != 200 || strings.Contains(body, "<html") || !strings.Contains(body, `id="state"`) {
		t.Errorf("fragment: status %d, %d bytes", res.StatusCode, len(body))
	}
}

// templateEscape is what html/template makes of text in an element.

// TestExecutionPageWithoutHistory: an execution that keeps no event history says how to turn it
// on where the trace would be.
func TestExecutionPageWithoutHistory(t *testing.T) {
	f := newFixture(t, Config{})
	res, body := f.get("/execution?id=order-3")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	if !strings.Contains(body, "event history is off") || !strings.Contains(body, "stead run --trace") {
		t.Errorf("the page of an execution without history does not say how to keep it")
	}
}

func templateEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s)
}

func TestSecurityHeaders(t *testing.T) {
	f := newFixture(t, Config{})
	for _, target := range []string{"/", "/execution?id=order-1", "/execution?id=nope", "/?status=bogus", "/static/console.js"} {
		res, _ := f.get(target)
		h := res.Header
		csp := h.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "script-src 'self' 'unsafe") ||
			!strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "default-src 'none'") {
			t.Errorf("%s: CSP %q", target, csp)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: headers %v", target, h)
		}
	}
	// No page carries an inline script: the CSP would refuse it.
	for _, target := range []string{"/", "/execution?id=order-1", "/execution?id=order-2"} {
		_, body := f.get(target)
		if regexp.MustCompile(`<script>|<script [^>]*>[^<]`).MatchString(body) || strings.Contains(body, " on") && regexp.MustCompile(` on[a-z]+=`).MatchString(body) {
			t.Errorf("%s carries inline script", target)
		}
	}
	res, body := f.get("/static/mermaid/mermaid.min.js")
	if res.StatusCode != 200 || !strings.Contains(res.Header.Get("Content-Type"), "javascript") || len(body) < 1<<20 {
		t.Errorf("mermaid: status %d, type %q, %d bytes", res.StatusCode, res.Header.Get("Content-Type"), len(body))
	}
}

// failing is a backend whose reads fail with a message no page may show.
type failing struct{ stead.Backend }

var errSecret = errors.New("pq: relation stead_executions: disk /var/secret/db on fire")

func (failing) Load(context.Context, string) (*stead.Execution, error)         { return nil, errSecret }
func (failing) List(context.Context, stead.ListQuery) ([]stead.Summary, error) { return nil, errSecret }

func TestStoreErrorsAreNotShown(t *testing.T) {
	inner := memstore.New()
	defer inner.Close()
	st := stead.NewStore(failing{inner.Backend()})
	f := newFixture(t, Config{Store: st})
	for _, target := range []string{"/", "/execution?id=order-1", "/events?id=order-1"} {
		res, body := f.get(target)
		if res.StatusCode != http.StatusInternalServerError {
			t.Errorf("%s: status %d, want 500", target, res.StatusCode)
		}
		if strings.Contains(body, "secret") || strings.Contains(body, "fire") || strings.Contains(body, "stead_executions") {
			t.Errorf("%s shows the store's error: %s", target, body)
		}
		if !regexp.MustCompile(`request <code>[0-9a-f]{12}</code>|request [0-9a-f]{12}`).MatchString(strings.ToLower(body)) &&
			!regexp.MustCompile(`Request id <code>[0-9a-f]{12}</code>`).MatchString(body) {
			t.Errorf("%s shows no request id: %s", target, body)
		}
	}
}

func TestControl(t *testing.T) {
	f := newFixture(t, Config{})
	cookie, token := f.csrf()
	form := func(op, id, tok string) url.Values { return url.Values{"op": {op}, "id": {id}, "csrf": {tok}} }
	status := func(id string) stead.Status {
		exe, err := f.store.Load(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		return exe.Status
	}
	refused := []struct {
		name string
		req  *http.Request
	}{
		{"no token", postForm("/control", form("suspend", "order-1", ""), cookie)},
		{"no cookie", postForm("/control", form("suspend", "order-1", token))},
		{"token of another cookie", postForm("/control", form("suspend", "order-1", token),
			&http.Cookie{Name: csrfCookie, Value: strings.Repeat("a", 32)})},
		{"forged token", postForm("/control", form("suspend", "order-1", strings.Repeat("0", 64)), cookie)},
	}
	crossSite := postForm("/control", form("suspend", "order-1", token), cookie)
	crossSite.Header.Set("Sec-Fetch-Site", "cross-site")
	otherOrigin := postForm("/control", form("suspend", "order-1", token), cookie)
	otherOrigin.Header.Set("Origin", "http://evil.example")
	nullOrigin := postForm("/control", form("suspend", "order-1", token), cookie)
	nullOrigin.Header.Set("Origin", "null") // without Sec-Fetch-Site nothing says where it came from
	refused = append(refused, struct {
		name string
		req  *http.Request
	}{"cross-site", crossSite}, struct {
		name string
		req  *http.Request
	}{"other origin", otherOrigin}, struct {
		name string
		req  *http.Request
	}{"null origin alone", nullOrigin})
	for _, tc := range refused {
		if res, _ := f.do(tc.req); res.StatusCode != http.StatusForbidden {
			t.Errorf("%s: status %d, want 403", tc.name, res.StatusCode)
		}
	}
	if got := status("order-1"); got != stead.StatusRunning {
		t.Fatalf("a refused request changed the status to %s", got)
	}

	same := postForm("/control", form("suspend", "order-1", token), cookie)
	same.Header.Set("Origin", "http://example.com") // httptest's host
	same.Header.Set("Sec-Fetch-Site", "same-origin")
	res, body := f.do(same)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/execution?id=order-1" {
		t.Fatalf("suspend: status %d %s: %s", res.StatusCode, res.Header.Get("Location"), body)
	}
	if got := status("order-1"); got != stead.StatusSuspended {
		t.Fatalf("after suspend: %s", got)
	}
	_, body = f.get("/execution?id=order-1")
	if !strings.Contains(body, `id="op-resume"`) || strings.Contains(body, `id="op-suspend"`) {
		t.Error("a suspended execution's page does not offer resume alone")
	}
	// Chromium's form POST under Referrer-Policy: no-referrer: Origin null, Sec-Fetch-Site same-origin.
	resume := postForm("/control", form("resume", "order-1", token), cookie)
	resume.Header.Set("Origin", "null")
	resume.Header.Set("Sec-Fetch-Site", "same-origin")
	if res, _ := f.do(resume); res.StatusCode != http.StatusSeeOther {
		t.Errorf("resume: status %d", res.StatusCode)
	}
	if got := status("order-1"); got != stead.StatusRunning {
		t.Errorf("after resume: %s", got)
	}

	for _, tc := range []struct {
		name   string
		form   url.Values
		status int
		say    string
	}{
		{"status refuses", form("resume", "order-3", token), http.StatusConflict, "it has ended"},
		{"unknown op", form("reset", "order-1", token), http.StatusBadRequest, "unknown command"},
		{"no id", form("suspend", "", token), http.StatusBadRequest, "no execution id"},
		{"unknown id", form("suspend", "nope", token), http.StatusNotFound, "no such execution"},
	} {
		res, body := f.do(postForm("/control", tc.form, cookie))
		if res.StatusCode != tc.status || !strings.Contains(body, tc.say) {
			t.Errorf("%s: status %d, want %d saying %q: %s", tc.name, res.StatusCode, tc.status, tc.say, body)
		}
	}
}

func TestReadOnly(t *testing.T) {
	f := newFixture(t, Config{ReadOnly: true})
	_, body := f.get("/execution?id=order-1")
	if strings.Contains(body, `id="controls"`) || strings.Contains(body, `action="/control"`) {
		t.Error("a read-only console shows the controls")
	}
	if !strings.Contains(body, "read-only") {
		t.Error("the page does not say read-only")
	}
	// The page has no form; a token made with the console's own secret is still refused.
	c := &http.Cookie{Name: csrfCookie, Value: strings.Repeat("b", 32)}
	tok := f.srv.mac("csrf", c.Value)
	res, _ := f.do(postForm("/control", url.Values{"op": {"suspend"}, "id": {"order-1"}, "csrf": {tok}}, c))
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("control in read-only: status %d, want 403", res.StatusCode)
	}
	if exe, _ := f.store.Load(t.Context(), "order-1"); exe.Status != stead.StatusRunning {
		t.Errorf("read-only control changed the status to %s", exe.Status)
	}
}

func TestToken(t *testing.T) {
	const token = "s3cret-token"
	f := newFixture(t, Config{Token: token})
	// Without the token: pages redirect to the login form, the rest is 401.
	res, _ := f.get("/")
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/login" {
		t.Errorf("GET / without a token: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	for _, r := range []*http.Request{
		httptest.NewRequest(http.MethodGet, "/events?id=order-1", nil),
		postForm("/control", url.Values{"op": {"suspend"}, "id": {"order-1"}}),
	} {
		if res, _ := f.do(r); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s %s without a token: %d", r.Method, r.URL, res.StatusCode)
		}
	}
	if res, _ := f.get("/static/console.css"); res.StatusCode != http.StatusOK {
		t.Errorf("the login form's style sheet without a token: %d", res.StatusCode)
	}
	bearer := func(tok string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/execution?id=order-1", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		return r
	}
	if res, _ := f.do(bearer(token)); res.StatusCode != http.StatusOK {
		t.Errorf("with the bearer token: %d", res.StatusCode)
	}
	if res, _ := f.do(bearer(token + "x")); res.StatusCode != http.StatusSeeOther {
		t.Errorf("with a wrong bearer token: %d", res.StatusCode)
	}

	// The login form: its own CSRF token, then the session cookie.
	res, body := f.get("/login")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("login page: %d", res.StatusCode)
	}
	var csrfC *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == csrfCookie {
			csrfC = c
		}
	}
	tok := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(body)
	if csrfC == nil || tok == nil {
		t.Fatal("the login form has no CSRF token")
	}
	if res, _ := f.do(postForm("/login", url.Values{"token": {"wrong"}, "csrf": {tok[1]}}, csrfC)); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("login with a wrong token: %d", res.StatusCode)
	}
	if res, _ := f.do(postForm("/login", url.Values{"token": {token}}, csrfC)); res.StatusCode != http.StatusForbidden {
		t.Errorf("login without its CSRF token: %d", res.StatusCode)
	}
	res, _ = f.do(postForm("/login", url.Values{"token": {token}, "csrf": {tok[1]}}, csrfC))
	var session *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == sessionCookie {
			session = c
		}
	}
	if res.StatusCode != http.StatusSeeOther || session == nil {
		t.Fatalf("login: %d, no session cookie", res.StatusCode)
	}
	if !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || strings.Contains(session.Value, token) {
		t.Errorf("session cookie %+v: want HttpOnly, SameSite=Strict, not the token", session)
	}
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.AddCookie(session)
	if res, _ := f.do(r); res.StatusCode != http.StatusOK {
		t.Errorf("with the session cookie: %d", res.StatusCode)
	}
	r = httptest.NewRequest(http.MethodGet, "/", nil)
	r.AddCookie(&http.Cookie{Name: sessionCookie, Value: token})
	if res, _ := f.do(r); res.StatusCode != http.StatusSeeOther {
		t.Errorf("with the raw token as the cookie: %d", res.StatusCode)
	}
}

func TestCheckAddr(t *testing.T) {
	for _, tc := range []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:8080", "", true},
		{"localhost:8080", "", true},
		{"[::1]:8080", "", true},
		{"127.1.2.3:0", "", true},
		{"0.0.0.0:8080", "", false},
		{":8080", "", false},
		{"192.168.1.5:8080", "", false},
		{"[::]:8080", "", false},
		{"0.0.0.0:8080", "t", true},
		{"no-port", "", false},
	} {
		if err := CheckAddr(tc.addr, tc.token); (err == nil) != tc.ok {
			t.Errorf("CheckAddr(%q, %q) = %v, want ok %v", tc.addr, tc.token, err, tc.ok)
		}
	}
}

func TestParseWhen(t *testing.T) {
	now := time.Date(2026, 7, 10, 0, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"2026-07-01T12:00:00+02:00": time.Date(2026, 7, 1, 10, 0, 0, 0, time.UTC),
		"2026-07-01T12:00":          time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC),
		"2026-07-01":                time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC),
		"36h":                       now.Add(-36 * time.Hour),
		"2d":                        now.Add(-48 * time.Hour),
	} {
		got, err := parseWhen(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("parseWhen(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "yesterday", "-3h", "xd", "2026-13-01"} {
		if _, err := parseWhen(in, now); err == nil {
			t.Errorf("parseWhen(%q) accepted", in)
		}
	}
}

// refuser is a controller that refuses every command as invalid, as worker.Client does a retry
// of a definition it has no machine for.
type refuser struct{}

func (refuser) Control(_ context.Context, id string, cmd worker.Command) (worker.Outcome, error) {
	return worker.Outcome{}, fmt.Errorf("worker: %w: %s %q: no machine for definition \"order\"", stead.ErrInvalid, cmd.Op, id)
}

// TestRetryNeedsTheActions checks that retry, which runs the definition's actions, is offered
// only for definitions the console has machines for, and that a refusal says why in words an
// operator reads, never as a bad cursor or filter.
func TestRetryNeedsTheActions(t *testing.T) {
	def, err := chart.SampleOrderFlow()
	if err != nil {
		t.Fatal(err)
	}
	order, err := chart.NewEngine(def, chart.RegisterSampleActions(chart.NewRegistry()))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		cfg     Config
		offered bool   // the page of the failed order-2 shows the retry button
		status  int    // what a POST of retry answers
		say     string // and what its page says
		retried bool   // order-2 is running again afterwards
	}{
		{"no machine", Config{Machines: worker.Machines{}}, false, http.StatusConflict,
			"does not have the actions of definition &#34;order&#34;", false},
		{"its machine", Config{Machines: worker.Machines{"order": order}, Definitions: map[string]*chart.Definition{}}, true,
			http.StatusSeeOther, "", true},
		{"a controller that refuses", Config{Control: refuser{}}, true, http.StatusConflict,
			"retry &#34;order-2&#34; was refused: retry &#34;order-2&#34;: no machine for definition", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.cfg)
			_, page := f.get("/execution?id=order-2")
			if got := strings.Contains(page, `id="op-retry"`); got != tc.offered {
				t.Errorf("retry offered: %v, want %v", got, tc.offered)
			}
			if !tc.offered && !strings.Contains(page, `id="no-retry"`) {
				t.Error("the page does not say why retry is not offered")
			}
			if !strings.Contains(page, `id="chart-src"`) {
				t.Error("no chart: the machine's (or the given) definition is drawn")
			}
			cookie, token := f.csrf()
			res, body := f.do(postForm("/control", url.Values{"op": {"retry"}, "id": {"order-2"}, "csrf": {token}}, cookie))
			if res.StatusCode != tc.status || !strings.Contains(body, tc.say) {
				t.Fatalf("retry: status %d, want %d saying %q: %s", res.StatusCode, tc.status, tc.say, body)
			}
			if strings.Contains(body, "cursor") {
				t.Errorf("a refused retry speaks of cursors: %s", body)
			}
			exe, err := f.store.Load(t.Context(), "order-2")
			if err != nil {
				t.Fatal(err)
			}
			if got := exe.Status != stead.StatusFailed; got != tc.retried {
				t.Errorf("order-2 is %s after the retry", exe.Status)
			}
		})
	}
}

// TestPrefix mounts the console under a path of a larger server: its links, redirects and
// cookies carry the prefix, and what is outside it is not the console's.
func TestPrefix(t *testing.T) {
	f := newFixture(t, Config{Prefix: "/ops/stead/"})
	for _, tc := range []struct {
		target string
		status int
		say    string
	}{
		{"/ops/stead/", 200, `href="/ops/stead/execution?id=order-1"`},
		{"/ops/stead", 200, `href="/ops/stead/static/console.css"`},
		{"/ops/stead/execution?id=order-1", 200, `action="/ops/stead/control"`},
		{"/ops/stead/static/console.js", 200, "EventSource"},
		{"/execution?id=order-1", 404, ""},
		{"/ops/steady/", 404, ""},
	} {
		res, body := f.get(tc.target)
		if res.StatusCode != tc.status || !strings.Contains(body, tc.say) {
			t.Errorf("GET %s: status %d, want %d with %q", tc.target, res.StatusCode, tc.status, tc.say)
		}
	}
	res, page := f.get("/ops/stead/execution?id=order-1")
	var cookie *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == csrfCookie {
			cookie = c
		}
	}
	if cookie == nil || cookie.Path != "/ops/stead/" {
		t.Fatalf("CSRF cookie %+v: want its path to be the prefix", cookie)
	}
	token := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(page)
	if token == nil {
		t.Fatal("no CSRF token on the page")
	}
	res, body := f.do(postForm("/ops/stead/control", url.Values{"op": {"suspend"}, "id": {"order-1"}, "csrf": {token[1]}}, cookie))
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/ops/stead/execution?id=order-1" {
		t.Errorf("suspend under the prefix: %d %q: %s", res.StatusCode, res.Header.Get("Location"), body)
	}
	if _, err := New(Config{Store: f.store, Prefix: "stead"}); !errors.Is(err, stead.ErrInvalid) {
		t.Errorf("a relative prefix: %v, want ErrInvalid", err)
	}
}

// TestListPagingByAttribute: the next page's link carries the attribute conditions, which the
// cursor is bound to, and pages through exactly the executions they select.
func TestListPagingByAttribute(t *testing.T) {
	f := newFixture(t, Config{})
	var seen []string
	next := "/?where=customer%3D42&limit=1"
	for pages := 0; next != ""; pages++ {
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		res, body := f.get(next)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d", next, res.StatusCode)
		}
		for _, m := range regexp.MustCompile(`class="exe" href="/execution\?id=([^"]+)"`).FindAllStringSubmatch(body, -1) {
			seen = append(seen, m[1])
		}
		next = ""
		if m := regexp.MustCompile(`href="([^"]+)" id="next"`).FindStringSubmatch(body); m != nil {
			next = strings.ReplaceAll(m[1], "&amp;", "&")
			if !strings.Contains(next, "where=customer%3D42") {
				t.Fatalf("the next page's link drops the condition: %s", next)
			}
		}
	}
	if got := strings.Join(seen, " "); got != "order-1 order-2" {
		t.Errorf("pages listed %s", got)
	}
}

// listRowOf returns the list's table row of execution id.
func listRowOf(t *testing.T, body, id string) string {
	t.Helper()
	for _, row := range strings.Split(body, "<tr>") {
		if strings.Contains(row, `class="exe"`) && strings.Contains(row, `">`+id+`</a></td>`) {
			return row
		}
	}
	t.Fatalf("no row of %s in the list", id)
	return ""
}

// TestListAttributeColumns: the list shows each execution's attributes, escaped, each a link
// to the list narrowed by its value; the keys of the filter's conditions get columns of their
// own, in their order, and leave the compact cell.
func TestListAttributeColumns(t *testing.T) {
	f := newFixture(t, Config{})
	_, body := f.get("/?definition=order")
	if !strings.Contains(body, "<th>Attributes</th>") || strings.Contains(body, `<th class="attr-col">`) {
		t.Fatal("without conditions the list should have the attributes cell and no attribute column")
	}
	row := listRowOf(t, body, "order-1")
	for _, want := range []string{
		`href="/?definition=order&amp;where=customer%3D42" title="int">customer=42</a>`,
		`>tier=gold &amp; &lt;b&gt;</a>`,
	} {
		if !strings.Contains(row, want) {
			t.Errorf("order-1's row lacks %q:\n%s", want, row)
		}
	}
	if row := listRowOf(t, body, "order-1:fulfilment.packing:0"); strings.Contains(row, `class="attr"`) {
		t.Errorf("an execution without attributes shows some:\n%s", row)
	}

	_, body = f.get("/?where=tier+%3D+%22gold+%26+%3Cb%3E%22&where=customer%3E0")
	if !strings.Contains(body, `<th class="attr-col">tier</th><th class="attr-col">customer</th><th>Attributes</th>`) {
		t.Fatalf("the conditions' keys are not columns in their order:\n%s", body)
	}
	row = listRowOf(t, body, "order-1")
	if !strings.Contains(row, `title="string">gold &amp; &lt;b&gt;</a></td>`) || !strings.Contains(row, `title="int">42</a></td>`) {
		t.Errorf("order-1's columns:\n%s", row)
	}
	if strings.Contains(row, `class="attr"`) {
		t.Errorf("a column's attribute is also in the compact cell:\n%s", row)
	}
	// A cell's link keeps the conditions and adds none it already has.
	if n := strings.Count(row, "where=customer%3D42"); n != 1 {
		t.Errorf("the customer cell's link: %d conditions customer=42, want 1:\n%s", n, row)
	}

	// A column for a key an execution lacks is an empty cell.
	_, body = f.get("/?where=customer%3D7&where=customer%3E0")
	row = listRowOf(t, body, "order-3")
	if strings.Count(body, `<th class="attr-col">customer</th>`) != 1 || !strings.Contains(row, `title="int">7</a></td>`) {
		t.Errorf("one column per key:\n%s", body)
	}
}

// TestListWithoutAttributeIndex: on a store whose backend does not index attributes the list
// still lists, without the attributes cell.
func TestListWithoutAttributeIndex(t *testing.T) {
	f := newFixture(t, Config{})
	// Not closed: the fixture closes the backend.
	plain := stead.NewStore(plainBackend{f.store.Backend()})
	srv, err := New(Config{Store: plain, ReadOnly: true, Poll: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	f.srv = srv
	res, body := f.get("/?definition=order")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	if !strings.Contains(body, "order-1") || strings.Contains(body, "<th>Attributes</th>") || strings.Contains(body, `class="attr"`) {
		t.Errorf("the list on a backend without an attribute index:\n%s", body)
	}
}

// plainBackend hides a backend's attribute index, as a backend written elsewhere may lack one.
type plainBackend struct{ stead.Backend }
