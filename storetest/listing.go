package storetest

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/steadhq/stead"
)

var listRules = []rule{
	{name: "filters", run: testListFilters},
	{name: "summaries_carry_the_columns", run: testListSummaries},
	{name: "page_boundaries", run: testListPageBoundaries},
	{name: "order_is_byte_wise", run: testListByteOrder},
	{name: "pages_while_inserting", run: testListWhileInserting},
	{name: "cursor_bound_to_filter", run: testListCursorBound},
	{name: "forged_cursors_are_refused", run: testListForgedCursors},
}

// finishedAt is the FinishedAt of every done execution of the listing seed.
var finishedAt = time.Unix(1700000000, 500000000).UTC()

type seedRow struct {
	name, def string
	status    stead.Status
	parent    string
}

// listSeed is the listing matrix: two definitions, every kind of status, two children.
var listSeed = []seedRow{
	{"e00", "d1", stead.StatusRunning, ""},
	{"e01", "d1", stead.StatusRunning, ""},
	{"e02", "d1", stead.StatusDone, ""},
	{"e03", "d1", stead.StatusDone, ""},
	{"e04", "d1", stead.StatusSuspended, ""},
	{"e05", "d2", stead.StatusRunning, ""},
	{"e06", "d2", stead.StatusRunning, ""},
	{"e07", "d2", stead.StatusDone, ""},
	{"e08", "d2", stead.StatusSuspended, ""},
	{"e09", "d2", stead.StatusFailed, ""},
	{"e10", "d2", stead.StatusRunning, "e05"},
	{"e11", "d2", stead.StatusRunning, "e05"},
}

// seedList commits the listing matrix and returns the stored executions by name.
func (h *harness) seedList() map[string]*stead.Execution {
	out := map[string]*stead.Execution{}
	for i, r := range listSeed {
		exe := h.newExe(r.name)
		exe.DefinitionID = h.id(r.def)
		exe.Status = r.status
		exe.ActivePath = "main/" + r.name
		if r.parent != "" {
			exe.ParentID = h.id(r.parent)
			exe.ChildID = "child-" + r.name
		}
		if r.status == stead.StatusDone {
			exe.Outcome = "approved"
			exe.FinishedAt = finishedAt
		}
		if r.status == stead.StatusFailed {
			exe.Error = "boom"
		}
		// Different versions, so that the summary's version is checked too.
		for range i%3 + 1 {
			h.commit(exe, stead.Bundle{})
		}
		out[r.name] = exe
	}
	return out
}

// collect follows NextCursor from the first page to the last and returns every summary. Pages
// must be full until the last, and the last page must not be empty unless it is the first.
func (h *harness) collect(f stead.ListFilter) []stead.Summary {
	h.Helper()
	var all []stead.Summary
	for pages := 0; ; pages++ {
		if pages > 1000 {
			h.Fatalf("List(%+v): more than 1000 pages", f)
		}
		p, err := h.s.List(h.ctx, f)
		if err != nil {
			h.Fatalf("List(%+v): %v", f, err)
		}
		limit := f.Limit
		if limit == 0 {
			limit = stead.DefaultListLimit
		}
		if len(p.Items) > limit {
			h.Fatalf("List(%+v) returned %d items", f, len(p.Items))
		}
		if p.NextCursor != "" && len(p.Items) < limit {
			h.Fatalf("List(%+v): a page of %d items (below the limit) carries a next cursor", f, len(p.Items))
		}
		if pages > 0 && len(p.Items) == 0 {
			h.Fatalf("List(%+v): a cursor led to an empty page; the page before it was the last", f)
		}
		all = append(all, p.Items...)
		if p.NextCursor == "" {
			return all
		}
		f.Cursor = p.NextCursor
	}
}

func summaryIDs(ss []stead.Summary) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.ID
	}
	return out
}

func (h *harness) ids(names ...string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = h.id(n)
	}
	return out
}

func testListFilters(h *harness) {
	h.seedList()
	d1, d2 := h.id("d1"), h.id("d2")
	S := func(s ...stead.Status) []stead.Status { return s }
	for _, c := range []struct {
		name string
		f    stead.ListFilter
		want []string
	}{
		{"definition d1", stead.ListFilter{DefinitionID: d1}, h.ids("e00", "e01", "e02", "e03", "e04")},
		{"d2 running", stead.ListFilter{DefinitionID: d2, Statuses: S(stead.StatusRunning)}, h.ids("e05", "e06", "e10", "e11")},
		{"d2 done or failed", stead.ListFilter{DefinitionID: d2, Statuses: S(stead.StatusDone, stead.StatusFailed)}, h.ids("e07", "e09")},
		{"d2 roots", stead.ListFilter{DefinitionID: d2, RootsOnly: true}, h.ids("e05", "e06", "e07", "e08", "e09")},
		{"d2 running roots", stead.ListFilter{DefinitionID: d2, Statuses: S(stead.StatusRunning), RootsOnly: true}, h.ids("e05", "e06")},
		{"suspended anywhere", stead.ListFilter{Statuses: S(stead.StatusSuspended)}, h.ids("e04", "e08")},
		{"everything", stead.ListFilter{}, h.ids("e00", "e01", "e02", "e03", "e04", "e05", "e06", "e07", "e08", "e09", "e10", "e11")},
		{"roots anywhere", stead.ListFilter{RootsOnly: true}, h.ids("e00", "e01", "e02", "e03", "e04", "e05", "e06", "e07", "e08", "e09")},
		{"repeated status", stead.ListFilter{DefinitionID: d1, Statuses: S(stead.StatusDone, stead.StatusDone)}, h.ids("e02", "e03")},
		{"status nobody has", stead.ListFilter{Statuses: S(stead.StatusCancelling, stead.StatusPending)}, nil},
		{"unknown definition", stead.ListFilter{DefinitionID: h.id("d3")}, nil},
		{"d1 failed", stead.ListFilter{DefinitionID: d1, Statuses: S(stead.StatusFailed)}, nil},
	} {
		for _, limit := range []int{4, 1, 0} {
			f := c.f
			f.Limit = limit
			got := summaryIDs(h.collect(f))
			if !slices.Equal(got, c.want) && len(got)+len(c.want) > 0 {
				h.Fatalf("%s (page size %d): %v, want %v", c.name, limit, got, c.want)
			}
		}
	}
}

func testListSummaries(h *harness) {
	seeded := h.seedList()
	got := h.collect(stead.ListFilter{Limit: 5})
	if len(got) != len(listSeed) {
		h.Fatalf("listed %d executions, want %d", len(got), len(listSeed))
	}
	for _, s := range got {
		name := s.ID[len(h.prefix):]
		exe := seeded[name]
		if exe == nil {
			h.Fatalf("listed an execution nobody seeded: %s", s.ID)
		}
		if want := normSummary(exe.Summarize()); dump(normSummary(s)) != dump(want) {
			h.Fatalf("summary of %s\n got %s\nwant %s", name, dump(normSummary(s)), dump(want))
		}
	}
	// The columns follow the execution as it changes.
	exe := seeded["e00"]
	exe.Status, exe.Outcome, exe.FinishedAt, exe.ActivePath = stead.StatusCancelled, "stopped", finishedAt.Add(time.Hour), ""
	h.commit(exe, stead.Bundle{})
	p, err := h.s.List(h.ctx, stead.ListFilter{DefinitionID: h.id("d1"), Statuses: []stead.Status{stead.StatusCancelled}})
	if err != nil || len(p.Items) != 1 {
		h.Fatalf("List(cancelled) = %+v, %v; want e00 alone", p, err)
	}
	if dump(normSummary(p.Items[0])) != dump(normSummary(exe.Summarize())) {
		h.Fatalf("summary after a status change\n got %s\nwant %s", dump(normSummary(p.Items[0])), dump(normSummary(exe.Summarize())))
	}
}

func testListPageBoundaries(h *harness) {
	h.seedList()
	d1 := h.id("d1")
	p, err := h.s.List(h.ctx, stead.ListFilter{DefinitionID: d1, Limit: 2})
	if err != nil {
		h.Fatalf("List: %v", err)
	}
	if got := summaryIDs(p.Items); !slices.Equal(got, h.ids("e00", "e01")) || p.NextCursor == "" {
		h.Fatalf("first page of 2 = %v (cursor %q), want e00 e01 and a cursor", got, p.NextCursor)
	}
	// A cursor can be used again: pages are read-only.
	for range 2 {
		next, err := h.s.List(h.ctx, stead.ListFilter{DefinitionID: d1, Limit: 2, Cursor: p.NextCursor})
		if err != nil || !slices.Equal(summaryIDs(next.Items), h.ids("e02", "e03")) {
			h.Fatalf("second page = %v, %v; want e02 e03", summaryIDs(next.Items), err)
		}
	}
	// The page size may change between pages; the filter may not.
	rest, err := h.s.List(h.ctx, stead.ListFilter{DefinitionID: d1, Limit: 10, Cursor: p.NextCursor})
	if err != nil || !slices.Equal(summaryIDs(rest.Items), h.ids("e02", "e03", "e04")) || rest.NextCursor != "" {
		h.Fatalf("rest = %v (cursor %q), %v; want e02 e03 e04 and no cursor", summaryIDs(rest.Items), rest.NextCursor, err)
	}
	// A page that exactly fills the limit and ends the listing has no cursor.
	exact, err := h.s.List(h.ctx, stead.ListFilter{DefinitionID: d1, Limit: 5})
	if err != nil || len(exact.Items) != 5 || exact.NextCursor != "" {
		h.Fatalf("List(d1, 5) = %d items, cursor %q, %v; want 5 and no cursor", len(exact.Items), exact.NextCursor, err)
	}
	empty, err := h.s.List(h.ctx, stead.ListFilter{DefinitionID: h.id("nothing")})
	if err != nil || len(empty.Items) != 0 || empty.NextCursor != "" {
		h.Fatalf("List(no match) = %+v, %v; want an empty last page", empty, err)
	}
}

func testListByteOrder(h *harness) {
	// Orders that a linguistic collation would shuffle: case, punctuation, spaces, non-ASCII.
	names := []string{"b", "B", "a-b", "ab", "aB", "a_b", "a b", "A1", "a1", "é", "z", "Z~", "a.b", "a:b:0"}
	for _, n := range names {
		exe := h.newExe(n)
		h.commit(exe, stead.Bundle{})
	}
	want := h.ids(names...)
	sort.Strings(want)
	for _, limit := range []int{1, 3, 100} {
		got := summaryIDs(h.collect(stead.ListFilter{DefinitionID: h.id("def"), Limit: limit}))
		if !slices.Equal(got, want) {
			h.Fatalf("page size %d: order %q, want byte-wise %q", limit, got, want)
		}
	}
}

// testListWhileInserting pages through a listing while rows are inserted before and after the
// cursor, deterministically between pages and concurrently from a goroutine. Every row that
// existed before the listing began must appear exactly once, in order.
func testListWhileInserting(h *harness) {
	def := h.id("def")
	var seeded []string
	for i := 0; i < 60; i += 2 {
		exe := h.newExe(fmt.Sprintf("r%03d", i))
		h.commit(exe, stead.Bundle{})
		seeded = append(seeded, exe.ID)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var bgErr error
	wg.Go(func() {
		for i := range 300 {
			select {
			case <-stop:
				return
			default:
			}
			exe := h.newExe(fmt.Sprintf("r%03d-bg-%d", (i*7)%60, i))
			if _, err := h.s.Commit(h.ctx, exe, stead.Bundle{}); err != nil {
				bgErr = err
				return
			}
		}
	})
	var got []string
	f := stead.ListFilter{DefinitionID: def, Limit: 4}
	for page := 0; ; page++ {
		p, err := h.s.List(h.ctx, f)
		if err == nil && page > 1000 {
			err = errors.New("more than 1000 pages: the cursor does not advance")
		}
		if err != nil {
			close(stop)
			wg.Wait()
			h.Fatalf("List page %d: %v", page, err)
		}
		got = append(got, summaryIDs(p.Items)...)
		if p.NextCursor == "" {
			break
		}
		f.Cursor = p.NextCursor
		// Between pages: one row before the cursor (an offset would shift and repeat a row) and
		// one after it.
		last := p.Items[len(p.Items)-1].ID
		for _, n := range []string{fmt.Sprintf("r%03d-early-%d", 0, page), fmt.Sprintf("%s-late-%d", last[len(h.prefix):], page)} {
			h.commit(h.newExe(n), stead.Bundle{})
		}
	}
	close(stop)
	wg.Wait()
	if bgErr != nil {
		h.Fatalf("concurrent insert: %v", bgErr)
	}
	if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
		h.Fatalf("listing repeated or reordered rows: %q", got)
	}
	for _, id := range seeded {
		if !slices.Contains(got, id) {
			h.Fatalf("listing skipped %s, which existed before it began", id)
		}
	}
}

func testListCursorBound(h *harness) {
	h.seedList()
	d1, d2 := h.id("d1"), h.id("d2")
	first := stead.ListFilter{DefinitionID: d2, Statuses: []stead.Status{stead.StatusRunning}, Limit: 1}
	p, err := h.s.List(h.ctx, first)
	if err != nil || p.NextCursor == "" {
		h.Fatalf("List = %+v, %v; want a cursor", p, err)
	}
	for _, c := range []struct {
		name string
		f    stead.ListFilter
	}{
		{"another definition", stead.ListFilter{DefinitionID: d1, Statuses: first.Statuses}},
		{"no definition", stead.ListFilter{Statuses: first.Statuses}},
		{"other statuses", stead.ListFilter{DefinitionID: d2, Statuses: []stead.Status{stead.StatusDone}}},
		{"no statuses", stead.ListFilter{DefinitionID: d2}},
		{"roots only", stead.ListFilter{DefinitionID: d2, Statuses: first.Statuses, RootsOnly: true}},
	} {
		c.f.Cursor = p.NextCursor
		_, err := h.s.List(h.ctx, c.f)
		if !errors.Is(err, stead.ErrInvalid) {
			h.Fatalf("cursor reused with %s: %v, want ErrInvalid", c.name, err)
		}
	}
	// The same statuses in another order or repeated are the same filter.
	same := first
	same.Statuses = []stead.Status{stead.StatusRunning, stead.StatusRunning}
	same.Cursor = p.NextCursor
	if _, err := h.s.List(h.ctx, same); err != nil {
		h.Fatalf("cursor reused with the same filter spelled differently: %v", err)
	}
}

// testListForgedCursors edits a cursor the store produced in every way a caller could: every
// truncation, every single-bit flip of its bytes, the id part replaced by another id. None may
// open a page: a cursor the store did not produce is ErrInvalid.
func testListForgedCursors(h *harness) {
	h.seedList()
	f := stead.ListFilter{DefinitionID: h.id("d1"), Limit: 1}
	p, err := h.s.List(h.ctx, f)
	if err != nil || p.NextCursor == "" {
		h.Fatalf("List = %+v, %v; want a cursor", p, err)
	}
	raw, err := base64.RawURLEncoding.DecodeString(p.NextCursor)
	if err != nil {
		// Not base64: the suite cannot edit it byte by byte, but it must still refuse edits of
		// the text.
		raw = []byte(p.NextCursor)
	}
	enc := func(b []byte) string {
		if err != nil {
			return string(b)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	var forged []string
	for n := 1; n < len(raw); n++ { // the empty cursor is the first page's
		forged = append(forged, enc(raw[:n]))
	}
	for i := range raw {
		for bit := range 8 {
			b := slices.Clone(raw)
			b[i] ^= 1 << bit
			if c := enc(b); c != p.NextCursor {
				forged = append(forged, c)
			}
		}
	}
	if i := bytes.Index(raw, []byte(p.Items[0].ID)); i >= 0 {
		b := slices.Concat(raw[:i], []byte(h.id("zz")), raw[i+len(p.Items[0].ID):])
		forged = append(forged, enc(b))
	}
	for _, c := range forged {
		f.Cursor = c
		if got, err := h.s.List(h.ctx, f); !errors.Is(err, stead.ErrInvalid) {
			h.Fatalf("forged cursor %q: %+v, %v; want ErrInvalid", c, got, err)
		}
	}
	f.Cursor = p.NextCursor
	if _, err := h.s.List(h.ctx, f); err != nil {
		h.Fatalf("the store's own cursor after the forgeries: %v", err)
	}
}
