package console

import (
	"net/http"
	"net/url"
	"regexp"
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
		{"unknown op", "/bulk?op=purge&status=done", http.StatusBadRequest, "unknown bulk operation"},
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
