package storetest

import (
	"errors"
	"slices"
	"sort"
	"time"

	"github.com/steadhq/stead"
)

// The rules of the id prefix and the time windows of a listing. They join the list group.
var filterRules = []rule{
	{name: "id_prefix_is_exact", run: testListPrefixExact},
	{name: "id_prefix_pages_with_other_filters", run: testListPrefixWithFilters},
	{name: "time_windows", run: testListWindows},
	{name: "time_windows_follow_commits", run: testListWindowsFollowCommits},
	{name: "cursor_bound_to_prefix_and_windows", run: testListCursorBoundToNewFilters},
}

// prefixIDs are ids whose prefixes a pattern-matching backend would confuse: LIKE's % and _ and
// its escape character \, a glob's * and [], ASCII case (SQLite's LIKE ignores it), multi-byte
// characters and the last code point, after which a naive upper bound breaks.
var prefixIDs = []string{
	"r", "r:A:0", "r:A:0:B:0", "rx", "R:A:0", "r;",
	"a_b:1", "aXb:1", "a_b", `a\b:1`, `a\\b:1`, "ab:1",
	"p%q:1", "p1q:1", "p%%q:1",
	"s*t:1", "sxt:1", "u[v]:1", "uv:1", "u[v]x",
	"é:1", "é", "ê:1", "e:1",
	"z\U0010ffff:1", "z\U0010ffff", "z\U0010ffff\U0010ffff:2", "{",
}

func testListPrefixExact(h *harness) {
	for _, id := range prefixIDs {
		h.commit(h.newExe(id), stead.Bundle{})
	}
	for _, c := range []struct {
		prefix string
		want   []string
	}{
		{"r:", []string{"r:A:0", "r:A:0:B:0"}},
		{"r:A:0:", []string{"r:A:0:B:0"}},
		{"R:", []string{"R:A:0"}},
		{"r", []string{"r", "r:A:0", "r:A:0:B:0", "r;", "rx"}},
		{"a_b:", []string{"a_b:1"}},
		{"a_b", []string{"a_b", "a_b:1"}},
		{`a\b:`, []string{`a\b:1`}},
		{`a\\`, []string{`a\\b:1`}},
		{"p%q:", []string{"p%q:1"}},
		{"p%", []string{"p%%q:1", "p%q:1"}},
		{"s*t:", []string{"s*t:1"}},
		{"u[v]", []string{"u[v]:1", "u[v]x"}},
		{"é", []string{"é", "é:1"}},
		{"z\U0010ffff", []string{"z\U0010ffff", "z\U0010ffff:1", "z\U0010ffff\U0010ffff:2"}},
		{"z\U0010ffff\U0010ffff", []string{"z\U0010ffff\U0010ffff:2"}},
		{"nothing", nil},
	} {
		want := h.ids(c.want...)
		sort.Strings(want)
		for _, limit := range []int{1, 2, 0} {
			got := summaryIDs(h.collect(stead.ListFilter{IDPrefix: h.id(c.prefix), Limit: limit}))
			if !slices.Equal(got, want) && len(got)+len(want) > 0 {
				h.Fatalf("prefix %q (page size %d): %q, want %q", c.prefix, limit, got, want)
			}
		}
	}
	// The suite's own prefix selects every row it wrote, in order.
	all := h.ids(prefixIDs...)
	sort.Strings(all)
	if got := summaryIDs(h.collect(stead.ListFilter{IDPrefix: h.prefix, Limit: 7})); !slices.Equal(got, all) {
		h.Fatalf("prefix %q: %q, want %q", h.prefix, got, all)
	}
}

// testListPrefixWithFilters lists a tree's descendants (the ids under "<root>:") together with
// the other filters, page by page.
func testListPrefixWithFilters(h *harness) {
	seeded := h.seedList() // e05 has the children e10 and e11
	for _, name := range []string{"e05:r:0", "e05:r:0:s:0", "e05:q:1", "e050"} {
		exe := h.newExe(name)
		exe.DefinitionID = h.id("d2")
		if name != "e050" {
			exe.ParentID = seeded["e05"].ID
		}
		if name == "e05:q:1" {
			exe.Status, exe.FinishedAt = stead.StatusDone, finishedAt
		}
		h.commit(exe, stead.Bundle{})
	}
	d1, d2 := h.id("d1"), h.id("d2")
	running := []stead.Status{stead.StatusRunning}
	for _, c := range []struct {
		name string
		f    stead.ListFilter
		want []string
	}{
		{"descendants", stead.ListFilter{IDPrefix: h.id("e05:")}, h.ids("e05:q:1", "e05:r:0", "e05:r:0:s:0")},
		{"running descendants", stead.ListFilter{IDPrefix: h.id("e05:"), Statuses: running}, h.ids("e05:r:0", "e05:r:0:s:0")},
		{"descendants of d2", stead.ListFilter{IDPrefix: h.id("e05:"), DefinitionID: d2}, h.ids("e05:q:1", "e05:r:0", "e05:r:0:s:0")},
		{"descendants of d1", stead.ListFilter{IDPrefix: h.id("e05:"), DefinitionID: d1}, nil},
		{"roots under e0", stead.ListFilter{IDPrefix: h.id("e0"), RootsOnly: true}, h.ids("e00", "e01", "e02", "e03", "e04", "e05", "e050", "e06", "e07", "e08", "e09")},
		{"finished under e05", stead.ListFilter{IDPrefix: h.id("e05"), Finished: stead.TimeRange{Before: finishedAt.Add(time.Second)}}, h.ids("e05:q:1")},
	} {
		for _, limit := range []int{1, 2, 0} {
			f := c.f
			f.Limit = limit
			got := summaryIDs(h.collect(f))
			if !slices.Equal(got, c.want) && len(got)+len(c.want) > 0 {
				h.Fatalf("%s (page size %d): %q, want %q", c.name, limit, got, c.want)
			}
		}
	}
}

// windowSeed is one execution of the window rules: its times are base plus these offsets
// (finished unset when negative).
var windowSeed = []struct {
	name                       string
	created, updated, finished time.Duration
	status                     stead.Status
	child                      bool
}{
	{"w0", 0, time.Hour, -1, stead.StatusRunning, false},
	{"w1", time.Minute, 2 * time.Hour, 3 * time.Hour, stead.StatusDone, false},
	{"w2", 2 * time.Minute, 3 * time.Hour, 4 * time.Hour, stead.StatusCancelled, false},
	{"w3", 3 * time.Minute, 4 * time.Hour, 5 * time.Hour, stead.StatusFailed, false},
	{"w4", 4 * time.Minute, 5 * time.Hour, 6 * time.Hour, stead.StatusDone, true},
	{"w5", 5 * time.Minute, 6 * time.Hour, -1, stead.StatusSuspended, false},
	{"w6", 5*time.Minute + time.Microsecond, 6*time.Hour + time.Microsecond, 6*time.Hour + time.Microsecond, stead.StatusDone, false},
}

func (h *harness) seedWindows() {
	for _, r := range windowSeed {
		exe := h.newExe(r.name)
		exe.Status = r.status
		exe.CreatedAt, exe.UpdatedAt = base.Add(r.created), base.Add(r.updated)
		if r.finished >= 0 {
			exe.FinishedAt = base.Add(r.finished)
		}
		if r.child {
			exe.ParentID, exe.ChildID = h.id("w0"), "c"
		}
		h.commit(exe, stead.Bundle{})
	}
}

func testListWindows(h *harness) {
	h.seedWindows()
	at := func(d time.Duration) time.Time { return base.Add(d) }
	// A window given in another zone, or with digits below a microsecond, means the same instant
	// once normalised: the store keeps microseconds.
	east := time.FixedZone("east", 5*3600)
	for _, c := range []struct {
		name string
		f    stead.ListFilter
		want []string
	}{
		{"created before the third minute", stead.ListFilter{Created: stead.TimeRange{Before: at(2 * time.Minute)}}, h.ids("w0", "w1")},
		{"created from the third minute", stead.ListFilter{Created: stead.TimeRange{From: at(2 * time.Minute)}}, h.ids("w2", "w3", "w4", "w5", "w6")},
		{"created in a window", stead.ListFilter{Created: stead.TimeRange{From: at(time.Minute), Before: at(3 * time.Minute)}}, h.ids("w1", "w2")},
		{"created before, in another zone", stead.ListFilter{Created: stead.TimeRange{Before: at(2 * time.Minute).In(east)}}, h.ids("w0", "w1")},
		{"created before, one microsecond apart", stead.ListFilter{Created: stead.TimeRange{Before: at(5*time.Minute + time.Microsecond)}}, h.ids("w0", "w1", "w2", "w3", "w4", "w5")},
		{"created from, nanoseconds dropped", stead.ListFilter{Created: stead.TimeRange{From: at(5*time.Minute + time.Microsecond + 999*time.Nanosecond)}}, h.ids("w6")},
		{"updated before the fourth hour", stead.ListFilter{Updated: stead.TimeRange{Before: at(4 * time.Hour)}}, h.ids("w0", "w1", "w2")},
		{"updated from the sixth hour", stead.ListFilter{Updated: stead.TimeRange{From: at(6 * time.Hour)}}, h.ids("w5", "w6")},
		{"finished before the fifth hour", stead.ListFilter{Finished: stead.TimeRange{Before: at(5 * time.Hour)}}, h.ids("w1", "w2")},
		{"finished from the fifth hour", stead.ListFilter{Finished: stead.TimeRange{From: at(5 * time.Hour)}}, h.ids("w3", "w4", "w6")},
		{"finished at all", stead.ListFilter{Finished: stead.TimeRange{From: at(-time.Hour)}}, h.ids("w1", "w2", "w3", "w4", "w6")},
		{"finished roots before the seventh hour", stead.ListFilter{RootsOnly: true, Finished: stead.TimeRange{Before: at(7 * time.Hour)}}, h.ids("w1", "w2", "w3", "w6")},
		{"done or cancelled roots finished before the seventh hour", stead.ListFilter{RootsOnly: true,
			Statuses: []stead.Status{stead.StatusDone, stead.StatusCancelled}, Finished: stead.TimeRange{Before: at(7 * time.Hour)}}, h.ids("w1", "w2", "w6")},
		{"every window at once", stead.ListFilter{Created: stead.TimeRange{From: at(time.Minute)},
			Updated: stead.TimeRange{Before: at(5 * time.Hour)}, Finished: stead.TimeRange{From: at(4 * time.Hour)}}, h.ids("w2", "w3")},
		{"a window nothing is in", stead.ListFilter{Finished: stead.TimeRange{Before: at(time.Hour)}}, nil},
		{"with the definition", stead.ListFilter{DefinitionID: h.id("def"), Updated: stead.TimeRange{From: at(5 * time.Hour)}}, h.ids("w4", "w5", "w6")},
	} {
		for _, limit := range []int{1, 2, 0} {
			f := c.f
			f.Limit = limit
			got := summaryIDs(h.collect(f))
			if !slices.Equal(got, c.want) && len(got)+len(c.want) > 0 {
				h.Fatalf("%s (page size %d): %q, want %q", c.name, limit, got, c.want)
			}
		}
	}
}

// testListWindowsFollowCommits moves one execution in and out of the windows by committing new
// times, and out of the roots: the listing follows every change (a backend that writes the
// indexed columns only when they change must notice each one, a finish time cleared included).
func testListWindowsFollowCommits(h *harness) {
	exe := h.newExe("moving")
	exe.Status = stead.StatusRunning
	h.commit(exe, stead.Bundle{})
	finished := stead.ListFilter{RootsOnly: true, Finished: stead.TimeRange{Before: base.Add(time.Hour)}}
	listed := func(f stead.ListFilter) bool {
		h.Helper()
		return slices.Contains(summaryIDs(h.collect(f)), exe.ID)
	}
	step := func(what string, change func(), f stead.ListFilter, want bool) {
		h.Helper()
		change()
		h.commit(exe, stead.Bundle{})
		if got := listed(f); got != want {
			h.Fatalf("after %s: listed %v, want %v", what, got, want)
		}
	}
	if listed(finished) {
		h.Fatal("a running execution is listed by a finished window")
	}
	step("finishing", func() { exe.Status, exe.FinishedAt = stead.StatusDone, base }, finished, true)
	step("a later finish", func() { exe.FinishedAt = base.Add(2 * time.Hour) }, finished, false)
	step("an earlier finish", func() { exe.FinishedAt = base.Add(time.Minute) }, finished, true)
	step("clearing the finish (a reset)", func() { exe.Status, exe.FinishedAt = stead.StatusRunning, time.Time{} }, finished, false)
	step("finishing again", func() { exe.Status, exe.FinishedAt = stead.StatusCancelled, base }, finished, true)
	step("gaining a parent", func() { exe.ParentID = h.id("somebody") }, finished, false)
	step("losing it", func() { exe.ParentID = "" }, finished, true)
	updated := stead.ListFilter{Updated: stead.TimeRange{From: base.Add(24 * time.Hour)}}
	step("a late update", func() { exe.UpdatedAt = base.Add(25 * time.Hour) }, updated, true)
	step("an update moved back", func() { exe.UpdatedAt = base }, updated, false)
}

func testListCursorBoundToNewFilters(h *harness) {
	h.seedWindows()
	first := stead.ListFilter{IDPrefix: h.id("w"), Finished: stead.TimeRange{From: base}, Limit: 1}
	p, err := h.s.List(h.ctx, first)
	if err != nil || p.NextCursor == "" {
		h.Fatalf("List = %+v, %v; want a cursor", p, err)
	}
	for _, c := range []struct {
		name string
		f    stead.ListFilter
	}{
		{"no prefix", stead.ListFilter{Finished: first.Finished}},
		{"another prefix", stead.ListFilter{IDPrefix: h.id("w1"), Finished: first.Finished}},
		{"no window", stead.ListFilter{IDPrefix: first.IDPrefix}},
		{"another bound", stead.ListFilter{IDPrefix: first.IDPrefix, Finished: stead.TimeRange{From: base.Add(time.Microsecond)}}},
		{"the bound on another time", stead.ListFilter{IDPrefix: first.IDPrefix, Updated: first.Finished}},
		{"one more bound", stead.ListFilter{IDPrefix: first.IDPrefix, Finished: stead.TimeRange{From: base, Before: farFuture}}},
	} {
		c.f.Cursor = p.NextCursor
		if _, err := h.s.List(h.ctx, c.f); !errors.Is(err, stead.ErrInvalid) {
			h.Fatalf("cursor reused with %s: %v, want ErrInvalid", c.name, err)
		}
	}
	same := first
	same.Cursor = p.NextCursor
	same.Finished.From = base.In(time.FixedZone("west", -7*3600))
	next, err := h.s.List(h.ctx, same)
	if err != nil || len(next.Items) != 1 || next.Items[0].ID <= p.Items[0].ID {
		h.Fatalf("the next page under the same filter = %+v, %v", next, err)
	}
}
