package console

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/bulk"
)

// TestBulkFromTheFilter: the list links a confirmation of a bulk job over its filter, which
// shows the dry run's count and writes nothing; its form starts the job, guarded as the buttons
// are, with the filter the list showed (attribute conditions included) and no page of it.
func TestBulkFromTheFilter(t *testing.T) {
	f := newFixture(t, Config{})
	_, body := f.get("/?where=customer%3D42&limit=1")
	m := regexp.MustCompile(`id="bulk-cancel" href="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("the list links no bulk cancel: %s", body)
	}
	confirm := strings.ReplaceAll(m[1], "&amp;", "&")
	if !strings.Contains(confirm, "where=customer%3D42") || strings.Contains(confirm, "limit=") {
		t.Fatalf("the bulk link %q does not carry the filter without its page", confirm)
	}
	res, body := f.get(confirm)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("confirmation: status %d: %s", res.StatusCode, body)
	}
	for _, want := range []string{`id="matched">2<`, `id="eligible">`, `name="filter" value="where=customer%3D42"`,
		`name="op" value="cancel"`, `id="bulk-confirm"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the confirmation lacks %q", want)
		}
	}
	jobs := func() int {
		t.Helper()
		n, err := f.store.Count(t.Context(), stead.ListFilter{DefinitionID: bulk.DefinitionID})
		if err != nil {
			t.Fatal(err)
		}
		return int(n.Total)
	}
	if jobs() != 0 {
		t.Fatal("the confirmation started a job")
	}

	for _, tc := range []struct {
		name, target string
		status       int
		say          string
	}{
		{"no criterion", "/bulk?op=cancel", http.StatusConflict, "needs a criterion"},
		{"unknown op", "/bulk?op=reset&status=done", http.StatusBadRequest, "unknown bulk operation"},
		{"bad condition", "/bulk?op=cancel&where=customer", http.StatusBadRequest, "attribute condition"},
	} {
		res, body := f.get(tc.target)
		if res.StatusCode != tc.status || !strings.Contains(body, tc.say) {
			t.Errorf("%s: status %d, want %d saying %q", tc.name, res.StatusCode, tc.status, tc.say)
		}
	}

	cookie, token := f.csrf()
	start := func(tok string, header ...string) *http.Request {
		r := postForm("/bulk", url.Values{"csrf": {tok}, "op": {"cancel"}, "filter": {"where=customer%3D42"}}, cookie)
		for i := 0; i+1 < len(header); i += 2 {
			r.Header.Set(header[i], header[i+1])
		}
		return r
	}
	for name, r := range map[string]*http.Request{
		"no token":   start(""),
		"bad token":  start(strings.Repeat("0", len(token))),
		"cross-site": start(token, "Sec-Fetch-Site", "cross-site"),
	} {
		if res, _ := f.do(r); res.StatusCode != http.StatusForbidden {
			t.Errorf("%s: status %d, want 403", name, res.StatusCode)
		}
	}
	if jobs() != 0 {
		t.Fatal("a refused POST started a job")
	}
	res, body = f.do(start(token, "Origin", "null", "Sec-Fetch-Site", "same-origin"))
	loc := res.Header.Get("Location")
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/execution?id=bulk-") {
		t.Fatalf("start: status %d, location %q: %s", res.StatusCode, loc, body)
	}
	id, _ := url.ParseQuery(strings.TrimPrefix(loc, "/execution?"))
	job, err := bulk.Get(t.Context(), f.store, id.Get("id"))
	if err != nil {
		t.Fatal(err)
	}
	if job.Spec.Op != bulk.OpCancel || job.Progress.Total != 2 || len(job.Spec.Filter.Attributes) != 1 ||
		job.Spec.Filter.Attributes[0].String() != "customer=42" || job.Spec.Filter.Limit != 0 {
		t.Errorf("job %+v", job)
	}
}

// TestBulkReadOnly: a read-only console neither links nor confirms nor starts a job.
func TestBulkReadOnly(t *testing.T) {
	f := newFixture(t, Config{ReadOnly: true})
	if _, body := f.get("/?status=running"); strings.Contains(body, `id="bulk"`) {
		t.Error("a read-only list links bulk jobs")
	}
	if res, _ := f.get("/bulk?op=cancel&status=running"); res.StatusCode != http.StatusForbidden {
		t.Errorf("confirmation in read-only: status %d, want 403", res.StatusCode)
	}
	c := &http.Cookie{Name: csrfCookie, Value: strings.Repeat("b", 32)}
	tok := f.srv.mac("csrf", c.Value)
	res, _ := f.do(postForm("/bulk", url.Values{"op": {"cancel"}, "filter": {"status=running"}, "csrf": {tok}}, c))
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("start in read-only: status %d, want 403", res.StatusCode)
	}
	if n, err := f.store.Count(t.Context(), stead.ListFilter{DefinitionID: bulk.DefinitionID}); err != nil || n.Total != 0 {
		t.Errorf("read-only started %d jobs (%v)", n.Total, err)
	}
}

// TestBulkRetrySendPurge: the list links retry, send and purge too; each confirmation shows the
// dry run's count of exactly the job its form starts, a send's event included, which it asks for
// first.
func TestBulkRetrySendPurge(t *testing.T) {
	f := newFixture(t, Config{})
	_, body := f.get("/?where=customer%3D42")
	for _, op := range []string{"suspend", "resume", "cancel", "retry", "send", "purge"} {
		if !strings.Contains(body, `id="bulk-`+op+`"`) {
			t.Errorf("the list links no bulk %s", op)
		}
	}
	cookie, token := f.csrf()
	start := func(form url.Values) bulk.Job {
		t.Helper()
		form.Set("csrf", token)
		r := postForm("/bulk", form, cookie)
		r.Header.Set("Sec-Fetch-Site", "same-origin")
		res, body := f.do(r)
		loc := res.Header.Get("Location")
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("start %v: status %d: %s", form, res.StatusCode, body)
		}
		id, _ := url.ParseQuery(strings.TrimPrefix(loc, "/execution?"))
		job, err := bulk.Get(t.Context(), f.store, id.Get("id"))
		if err != nil {
			t.Fatal(err)
		}
		return job
	}
	// formOf reads the hidden fields of the confirmation's start form.
	formOf := func(body string) url.Values {
		t.Helper()
		i := strings.Index(body, `id="bulk-start"`)
		if i < 0 {
			t.Fatalf("no start form: %s", body)
		}
		v := url.Values{}
		for _, m := range regexp.MustCompile(`type="hidden" name="(op|filter|kind|data)" value="([^"]*)"`).FindAllStringSubmatch(body[i:], -1) {
			v.Set(m[1], html.UnescapeString(m[2]))
		}
		return v
	}

	for _, tc := range []struct {
		op, filter       string
		matched, eligble string
		note             string
	}{
		{"retry", "where=customer%3D42", "2", "1", `id="retry-note"`},
		{"purge", "where=customer%3E0", "3", "1", `id="purge-note"`},
	} {
		res, body := f.get("/bulk?op=" + tc.op + "&" + tc.filter)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d: %s", tc.op, res.StatusCode, body)
		}
		for _, want := range []string{`id="matched">` + tc.matched + `<`, `id="eligible">` + tc.eligble + `<`, tc.note} {
			if !strings.Contains(body, want) {
				t.Errorf("%s: the confirmation lacks %q", tc.op, want)
			}
		}
		job := start(formOf(body))
		if string(job.Spec.Op) != tc.op {
			t.Errorf("%s: job %+v", tc.op, job)
		}
		if n, _ := strconv.Atoi(tc.matched); job.Progress.Total != int64(n) {
			t.Errorf("%s: the job's total %d, the confirmation said %s", tc.op, job.Progress.Total, tc.matched)
		}
	}

	// A send asks for its event before it counts.
	res, body := f.get("/bulk?op=send&where=customer%3D42")
	if res.StatusCode != http.StatusOK || !strings.Contains(body, `id="bulk-event"`) || strings.Contains(body, `id="bulk-start"`) {
		t.Fatalf("send without an event: status %d, want the event's form and no start: %s", res.StatusCode, body)
	}
	if !strings.Contains(body, `name="where" value="customer=42"`) || !strings.Contains(body, `name="op" value="send"`) {
		t.Errorf("the event's form drops the filter: %s", body)
	}
	res, body = f.get("/bulk?op=send&where=customer%3D42&kind=nudge&data=%7B%22n%22%3A%201%7D")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("send: status %d: %s", res.StatusCode, body)
	}
	for _, want := range []string{`id="matched">2<`, `id="eligible">1<`, `<code>nudge</code>`} {
		if !strings.Contains(body, want) {
			t.Errorf("send: the confirmation lacks %q", want)
		}
	}
	form := formOf(body)
	if form.Get("kind") != "nudge" || form.Get("data") != `{"n": 1}` {
		t.Fatalf("send: the start form carries %v", form)
	}
	job := start(form)
	if job.Spec.Op != bulk.OpSend || job.Spec.EventKind != "nudge" || string(job.Spec.EventData) != `{"n":1}` || job.Progress.Total != 2 {
		t.Errorf("send: job %+v", job)
	}

	for _, tc := range []struct {
		name, target string
		status       int
		say          string
	}{
		{"data not JSON", "/bulk?op=send&status=running&kind=nudge&data=%7Bnope", http.StatusBadRequest, "not JSON"},
		{"a control kind", "/bulk?op=send&status=running&kind=stead.suspend", http.StatusConflict, "use the operation"},
		{"an event for a cancel", "/bulk?op=cancel&status=running&kind=nudge", http.StatusBadRequest, "sends no event"},
	} {
		res, body := f.get(tc.target)
		if res.StatusCode != tc.status || !strings.Contains(body, tc.say) {
			t.Errorf("%s: status %d, want %d saying %q: %s", tc.name, res.StatusCode, tc.status, tc.say, body)
		}
	}
}
