package storetest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/steadhq/stead"
)

// The rules of execution attributes: stored with the commit that sets them, returned by Load,
// and filtered by List and Count alone or with every other filter.
var attributeRules = []rule{
	{name: "load_returns_them", run: testAttrsLoad},
	{name: "filters_match_the_reference", run: testAttrsFilters},
	{name: "kinds_never_mix", run: testAttrsKinds},
	{name: "strings_compare_byte_wise", run: testAttrsByteOrder},
	{name: "combined_with_other_filters", run: testAttrsCombined},
	{name: "commit_changes_them", run: testAttrsCommitChanges},
	{name: "batch_changes_them", run: testAttrsBatchChanges},
	{name: "lost_cas_changes_nothing", run: testAttrsLostCAS},
	{name: "cursor_bound_to_conditions", run: testAttrsCursorBound},
	{name: "purge_removes_them", run: testAttrsPurge},
	{name: "bad_input_writes_nothing", run: testAttrsBadInput},
	{name: "listed_when_asked", run: testAttrsListed},
}

// attrT0 is the time the attribute matrix's times are counted from.
var attrT0 = time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)

// attrSeed is the attribute matrix: for each execution of the listing matrix, its attributes.
// Every kind appears, keys are shared and not, values repeat, and e11 carries none.
func attrSeed() map[string]map[string]stead.AttrValue {
	out := map[string]map[string]stead.AttrValue{}
	for i := range 11 {
		a := map[string]stead.AttrValue{
			"customer": stead.AttrInt(int64(40 + i%4)),  // 40..43
			"amount":   stead.AttrInt(int64(i*25 - 50)), // -50..200
			"region":   stead.AttrString([]string{"eu", "us", "ap"}[i%3]),
			"due":      stead.AttrTime(attrT0.Add(time.Duration(i) * time.Hour)),
		}
		if i%2 == 0 {
			a["paid"] = stead.AttrBool(i%4 == 0)
		}
		if i == 3 {
			a["customer"] = stead.AttrString("42") // a string that reads like an integer
		}
		out[fmt.Sprintf("e%02d", i)] = a
	}
	return out
}

// seedAttrs commits the listing matrix with the attribute matrix set at create.
func (h *harness) seedAttrs() (map[string]*stead.Execution, map[string]map[string]stead.AttrValue) {
	attrs := attrSeed()
	exes := map[string]*stead.Execution{}
	for i, r := range listSeed {
		exe := h.newExe(r.name)
		exe.DefinitionID = h.id(r.def)
		exe.Status = r.status
		exe.Attributes = attrs[r.name]
		if r.parent != "" {
			exe.ParentID = h.id(r.parent)
		}
		if r.status == stead.StatusDone {
			exe.FinishedAt = finishedAt
		}
		for range i%2 + 1 { // a later commit without changes keeps them
			h.commit(exe, stead.Bundle{})
		}
		exes[r.name] = exe
	}
	return exes, attrs
}

// wantAttrList lists and counts under f, page sizes 1, 3 and the default, and holds the ids to
// want (names) and the count to their number.
func (h *harness) wantAttrList(what string, f stead.ListFilter, want []string) {
	h.Helper()
	ids := h.ids(want...)
	slices.Sort(ids)
	for _, limit := range []int{1, 3, 0} {
		f.Limit = limit
		got := summaryIDs(h.collect(f))
		if !slices.Equal(got, ids) && len(got)+len(ids) > 0 {
			h.Fatalf("%s (page size %d): listed %q, want %q", what, limit, got, ids)
		}
	}
	c, err := h.s.Count(h.ctx, f)
	if err != nil {
		h.Fatalf("%s: count: %v", what, err)
	}
	if c.Total != int64(len(ids)) {
		h.Fatalf("%s: count %d, want %d", what, c.Total, len(ids))
	}
}

// reference is the names whose attributes satisfy every condition, by AttrFilter.Matches.
func reference(attrs map[string]map[string]stead.AttrValue, fs ...stead.AttrFilter) []string {
	var out []string
	for name, a := range attrs {
		ok := true
		for i := range fs {
			ok = ok && fs[i].Matches(a)
		}
		if ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func testAttrsLoad(h *harness) {
	exes, _ := h.seedAttrs()
	for name, exe := range exes {
		h.sameExe("load "+name, h.load(exe.ID), exe)
	}
}

// testAttrsFilters runs every comparison on every kind and holds List and Count to the
// reference meaning (AttrFilter.Matches) of each.
func testAttrsFilters(h *harness) {
	_, attrs := h.seedAttrs()
	attrs["e11"] = nil
	t := func(d time.Duration) stead.AttrValue { return stead.AttrTime(attrT0.Add(d)) }
	i, s, b := stead.AttrInt, stead.AttrString, stead.AttrBool
	cases := [][]stead.AttrFilter{
		{stead.Where("customer", stead.AttrEq, i(42))},
		{stead.Where("customer", stead.AttrEq, s("42"))},
		{stead.Where("amount", stead.AttrGt, i(100))},
		{stead.Where("amount", stead.AttrGe, i(100))},
		{stead.Where("amount", stead.AttrLt, i(0))},
		{stead.Where("amount", stead.AttrLe, i(0))},
		{stead.Where("amount", stead.AttrGt, i(-1000))},
		{stead.Where("amount", stead.AttrGt, i(0)), stead.Where("amount", stead.AttrLt, i(100))},
		{stead.Where("region", stead.AttrEq, s("eu"))},
		{stead.Where("region", stead.AttrGe, s("eu"))},
		{stead.Where("region", stead.AttrIn, s("ap"), s("us"), s("nowhere"))},
		{stead.Where("customer", stead.AttrIn, i(40), i(42))},
		{stead.Where("due", stead.AttrLt, t(3*time.Hour))},
		{stead.Where("due", stead.AttrGe, t(3*time.Hour)), stead.Where("due", stead.AttrLe, t(5*time.Hour))},
		{stead.Where("due", stead.AttrEq, t(7*time.Hour))},
		{stead.Where("due", stead.AttrIn, t(0), t(10*time.Hour))},
		{stead.Where("paid", stead.AttrEq, b(true))},
		{stead.Where("paid", stead.AttrEq, b(false))},
		{stead.Where("paid", stead.AttrIn, b(false), b(true))},
		{stead.Where("customer", stead.AttrEq, i(42)), stead.Where("region", stead.AttrEq, s("us"))},
		{stead.Where("customer", stead.AttrEq, i(40)), stead.Where("paid", stead.AttrEq, b(true))},
		{stead.Where("missing", stead.AttrEq, i(1))},
		{stead.Where("region", stead.AttrEq, s("EU"))},
	}
	for _, fs := range cases {
		what := fmt.Sprint(fs)
		want := reference(attrs, fs...)
		if len(want) == 0 && !strings.Contains(what, "missing") && !strings.Contains(what, "EU") {
			h.Fatalf("%s: the matrix matches nothing; the case tests nothing", what)
		}
		h.wantAttrList(what, stead.ListFilter{IDPrefix: h.prefix, Attributes: fs}, want)
	}
}

// testAttrsKinds holds a condition to its value's kind: 42 the integer never matches "42" the
// string, nor true the integer 1.
func testAttrsKinds(h *harness) {
	for name, v := range map[string]stead.AttrValue{
		"int": stead.AttrInt(1), "str": stead.AttrString("1"), "bool": stead.AttrBool(true),
		"time": stead.AttrTime(time.Unix(0, 1000).UTC()),
	} {
		exe := h.newExe(name)
		exe.Attributes = map[string]stead.AttrValue{"k": v}
		h.commit(exe, stead.Bundle{})
	}
	for _, c := range []struct {
		v    stead.AttrValue
		want string
	}{
		{stead.AttrInt(1), "int"}, {stead.AttrString("1"), "str"}, {stead.AttrBool(true), "bool"},
		{stead.AttrTime(time.Unix(0, 1000).UTC()), "time"},
	} {
		h.wantAttrList("k="+c.v.Kind().String(), stead.ListFilter{IDPrefix: h.prefix,
			Attributes: []stead.AttrFilter{stead.Where("k", stead.AttrEq, c.v)}}, []string{c.want})
	}
	// The time 1 µs after the epoch is 1 as a number, but a range on integers never reaches it.
	h.wantAttrList("k<=1 as integers", stead.ListFilter{IDPrefix: h.prefix,
		Attributes: []stead.AttrFilter{stead.Where("k", stead.AttrLe, stead.AttrInt(1))}}, []string{"int"})
}

// testAttrsByteOrder holds string ranges to byte-wise order, as Go compares strings: upper case
// before lower case, and multi-byte characters after ASCII, whatever the database's collation.
func testAttrsByteOrder(h *harness) {
	vals := []string{"B", "a", "b", "Z", "é", "e", "a b", "a-b", "~", "\U0010ffff"}
	attrs := map[string]map[string]stead.AttrValue{}
	for n, v := range vals {
		name := fmt.Sprintf("s%02d", n)
		exe := h.newExe(name)
		exe.Attributes = map[string]stead.AttrValue{"name": stead.AttrString(v)}
		attrs[name] = exe.Attributes
		h.commit(exe, stead.Bundle{})
	}
	for _, v := range vals {
		for _, op := range []stead.AttrOp{stead.AttrLt, stead.AttrGe} {
			f := stead.Where("name", op, stead.AttrString(v))
			h.wantAttrList(f.String(), stead.ListFilter{IDPrefix: h.prefix, Attributes: []stead.AttrFilter{f}},
				reference(attrs, f))
		}
	}
}

// testAttrsCombined pairs an attribute condition with each other filter of a listing.
func testAttrsCombined(h *harness) {
	_, attrs := h.seedAttrs()
	attrs["e11"] = nil
	cond := stead.Where("amount", stead.AttrGe, stead.AttrInt(0)) // e02..e10
	keep := func(names ...string) []string {
		var out []string
		for _, n := range names {
			if cond.Matches(attrs[n]) {
				out = append(out, n)
			}
		}
		return out
	}
	p := h.prefix
	for _, c := range []struct {
		what string
		f    stead.ListFilter
		want []string
	}{
		{"definition", stead.ListFilter{IDPrefix: p, DefinitionID: h.id("d1")}, keep("e00", "e01", "e02", "e03", "e04")},
		{"statuses", stead.ListFilter{IDPrefix: p, Statuses: []stead.Status{stead.StatusDone, stead.StatusFailed}}, keep("e02", "e03", "e07", "e09")},
		{"roots", stead.ListFilter{IDPrefix: p, RootsOnly: true}, keep("e00", "e01", "e02", "e03", "e04", "e05", "e06", "e07", "e08", "e09")},
		{"prefix", stead.ListFilter{IDPrefix: h.id("e1")}, keep("e10", "e11")},
		{"finished", stead.ListFilter{IDPrefix: p, Finished: stead.TimeRange{From: finishedAt}}, keep("e02", "e03", "e07")},
		{"every filter", stead.ListFilter{IDPrefix: p, DefinitionID: h.id("d2"), RootsOnly: true,
			Statuses: []stead.Status{stead.StatusRunning, stead.StatusDone}}, keep("e05", "e06", "e07")},
	} {
		c.f.Attributes = []stead.AttrFilter{cond}
		h.wantAttrList(c.what, c.f, c.want)
	}
}

// testAttrsCommitChanges sets, replaces and deletes attributes through a commit's bundle and
// holds Load, List and Count to the result; a commit without changes keeps them.
func testAttrsCommitChanges(h *harness) {
	exe := h.newExe("x")
	exe.Attributes = map[string]stead.AttrValue{"stage": stead.AttrString("payment"), "customer": stead.AttrInt(42)}
	h.commit(exe, stead.Bundle{})
	other := h.newExe("y")
	other.Attributes = map[string]stead.AttrValue{"stage": stead.AttrString("payment")}
	h.commit(other, stead.Bundle{})
	stage := func(v string) stead.ListFilter {
		return stead.ListFilter{IDPrefix: h.prefix, Attributes: []stead.AttrFilter{stead.Where("stage", stead.AttrEq, stead.AttrString(v))}}
	}
	h.wantAttrList("before", stage("payment"), []string{"x", "y"})

	changes := map[string]stead.AttrValue{"stage": stead.AttrString("shipping"), "customer": {}, "amount": stead.AttrInt(7)}
	h.commit(exe, stead.Bundle{Attributes: changes, ProcessedEventID: "ev-1"})
	exe.Attributes = map[string]stead.AttrValue{"stage": stead.AttrString("shipping"), "amount": stead.AttrInt(7)}
	h.sameExe("after the change", h.load(exe.ID), exe)
	h.wantAttrList("old value", stage("payment"), []string{"y"})
	h.wantAttrList("new value", stage("shipping"), []string{"x"})
	h.wantAttrList("deleted key", stead.ListFilter{IDPrefix: h.prefix,
		Attributes: []stead.AttrFilter{stead.Where("customer", stead.AttrEq, stead.AttrInt(42))}}, nil)

	// A commit with a full bundle and no changes keeps them.
	h.commit(exe, h.fullBundle(exe.ID, "full"))
	h.wantAttrList("kept", stage("shipping"), []string{"x"})
	h.sameExe("kept", h.load(exe.ID), exe)

	// Deleting every key leaves none.
	h.commit(exe, stead.Bundle{Attributes: map[string]stead.AttrValue{"stage": {}, "amount": {}}})
	exe.Attributes = nil
	h.sameExe("all deleted", h.load(exe.ID), exe)
	h.wantAttrList("all deleted", stage("shipping"), nil)
}

func testAttrsBatchChanges(h *harness) {
	var items []stead.CommitItem
	for n := range 4 {
		exe := h.newExe(fmt.Sprintf("b%d", n))
		exe.Attributes = map[string]stead.AttrValue{"n": stead.AttrInt(int64(n))}
		items = append(items, stead.CommitItem{Execution: exe})
	}
	res, err := h.s.CommitBatch(h.ctx, items)
	if err != nil {
		h.Fatalf("CommitBatch: %v", err)
	}
	for i := range items {
		if res[i].Err != nil {
			h.Fatalf("item %d: %v", i, res[i].Err)
		}
		items[i].Execution.Version = res[i].Version
	}
	n := func(op stead.AttrOp, v int64) stead.ListFilter {
		return stead.ListFilter{IDPrefix: h.prefix, Attributes: []stead.AttrFilter{stead.Where("n", op, stead.AttrInt(v))}}
	}
	h.wantAttrList("inserted by a batch", n(stead.AttrGe, 2), []string{"b2", "b3"})
	// b0 and b2 change, b1 loses its compare-and-swap, b3 commits without changes.
	items[0].Bundle = stead.Bundle{Attributes: map[string]stead.AttrValue{"n": stead.AttrInt(10)}}
	items[1].Bundle = stead.Bundle{Attributes: map[string]stead.AttrValue{"n": stead.AttrInt(11)}}
	items[1].Execution.Version = 7
	items[2].Bundle = stead.Bundle{Attributes: map[string]stead.AttrValue{"n": {}}}
	res, err = h.s.CommitBatch(h.ctx, items)
	if err != nil {
		h.Fatalf("CommitBatch: %v", err)
	}
	if res[0].Err != nil || !errors.Is(res[1].Err, stead.ErrConflict) || res[2].Err != nil || res[3].Err != nil {
		h.Fatalf("CommitBatch results: %v, %v, %v, %v", res[0].Err, res[1].Err, res[2].Err, res[3].Err)
	}
	h.wantAttrList("changed by a batch", n(stead.AttrGe, 2), []string{"b0", "b3"})
	h.wantAttrList("lost in a batch", n(stead.AttrEq, 1), []string{"b1"})
}

func testAttrsLostCAS(h *harness) {
	exe := h.newExe("x")
	exe.Attributes = map[string]stead.AttrValue{"stage": stead.AttrString("a")}
	h.commit(exe, stead.Bundle{})
	stale := exe.Clone()
	h.commit(exe, stead.Bundle{})
	before := h.snap([]string{exe.ID})
	_, err := h.s.Commit(h.ctx, stale, stead.Bundle{Attributes: map[string]stead.AttrValue{"stage": stead.AttrString("b")}})
	h.wantConflict("stale commit", err, exe.ID, stale.Version, exe.Version)
	h.unchanged("stale commit", before, []string{exe.ID})
	// A second insert of the same id loses too, and leaves the first one's attributes.
	dup := h.newExe("x")
	dup.Attributes = map[string]stead.AttrValue{"stage": stead.AttrString("c")}
	_, err = h.s.Commit(h.ctx, dup, stead.Bundle{})
	h.wantErr("duplicate insert", err, stead.ErrConflict)
	for v, want := range map[string][]string{"a": {"x"}, "b": nil, "c": nil} {
		h.wantAttrList("stage="+v, stead.ListFilter{IDPrefix: h.prefix,
			Attributes: []stead.AttrFilter{stead.Where("stage", stead.AttrEq, stead.AttrString(v))}}, want)
	}
}

// testAttrsCursorBound refuses a cursor of one attribute filter under another, and opens it
// under the same conditions given in another order.
func testAttrsCursorBound(h *harness) {
	h.seedAttrs()
	a := stead.Where("amount", stead.AttrGe, stead.AttrInt(0))
	r := stead.Where("region", stead.AttrIn, stead.AttrString("eu"), stead.AttrString("us"))
	f := stead.ListFilter{IDPrefix: h.prefix, Attributes: []stead.AttrFilter{a, r}, Limit: 1}
	p, err := h.s.List(h.ctx, f)
	if err != nil || p.NextCursor == "" {
		h.Fatalf("first page: %+v, %v", p, err)
	}
	same := f
	same.Attributes = []stead.AttrFilter{
		stead.Where("region", stead.AttrIn, stead.AttrString("us"), stead.AttrString("eu"), stead.AttrString("us")), a}
	same.Cursor = p.NextCursor
	if _, err := h.s.List(h.ctx, same); err != nil {
		h.Fatalf("the same conditions in another order refused the cursor: %v", err)
	}
	for what, other := range map[string][]stead.AttrFilter{
		"no conditions":   nil,
		"another value":   {stead.Where("amount", stead.AttrGe, stead.AttrInt(1)), r},
		"another op":      {stead.Where("amount", stead.AttrGt, stead.AttrInt(0)), r},
		"another kind":    {stead.Where("amount", stead.AttrGe, stead.AttrString("0")), r},
		"another key":     {stead.Where("amount2", stead.AttrGe, stead.AttrInt(0)), r},
		"a smaller set":   {a, stead.Where("region", stead.AttrIn, stead.AttrString("eu"))},
		"one fewer":       {a},
		"another set key": {a, stead.Where("regio", stead.AttrIn, stead.AttrString("eu"), stead.AttrString("us"))},
	} {
		g := f
		g.Attributes, g.Cursor = other, p.NextCursor
		if _, err := h.s.List(h.ctx, g); !errors.Is(err, stead.ErrInvalid) {
			h.Fatalf("%s: the cursor opened (%v)", what, err)
		}
	}
}

// testAttrsPurge purges an execution with attributes; one created again under its id without
// them is not found by them.
func testAttrsPurge(h *harness) {
	exe := h.newExe("x")
	exe.Attributes = map[string]stead.AttrValue{"stage": stead.AttrString("a")}
	h.commit(exe, stead.Bundle{})
	if ok, err := h.s.Purge(h.ctx, exe.ID, exe.Version); err != nil || !ok {
		h.Fatalf("Purge: %v, %v", ok, err)
	}
	f := stead.ListFilter{IDPrefix: h.prefix, Attributes: []stead.AttrFilter{stead.Where("stage", stead.AttrEq, stead.AttrString("a"))}}
	h.wantAttrList("purged", f, nil)
	again := h.newExe("x")
	h.commit(again, stead.Bundle{})
	h.wantAttrList("created again without attributes", f, nil)
}

// testAttrsBadInput refuses invalid attributes at create and in a bundle, writing nothing.
func testAttrsBadInput(h *harness) {
	exe := h.newExe("x")
	exe.Attributes = map[string]stead.AttrValue{"ok": stead.AttrInt(1)}
	h.commit(exe, stead.Bundle{})
	before := h.snap([]string{exe.ID, h.id("new")})
	many := map[string]stead.AttrValue{}
	for n := range stead.MaxAttributes + 1 {
		many[fmt.Sprintf("k%02d", n)] = stead.AttrInt(int64(n))
	}
	for what, b := range map[string]map[string]stead.AttrValue{
		"bad key":         {"no spaces": stead.AttrInt(1)},
		"nul in a value":  {"k": stead.AttrString("a\x00")},
		"invalid UTF-8":   {"k": stead.AttrString("\xc3")},
		"oversized value": {"k": stead.AttrString(strings.Repeat("v", stead.MaxAttrStringLen+1))},
		"zero time":       {"k": stead.AttrTime(time.Time{})},
		"one too many":    many,
	} {
		_, err := h.s.Commit(h.ctx, exe, stead.Bundle{Attributes: b})
		h.wantErr(what, err, stead.ErrInvalid)
		fresh := h.newExe("new")
		fresh.Attributes = maps.Clone(b)
		_, err = h.s.Commit(h.ctx, fresh, stead.Bundle{})
		h.wantErr(what+" at create", err, stead.ErrInvalid)
	}
	h.unchanged("refused attributes", before, []string{exe.ID, h.id("new")})
	for what, f := range map[string]stead.AttrFilter{
		"unknown op":     stead.Where("k", "~", stead.AttrInt(1)),
		"mixed set":      stead.Where("k", stead.AttrIn, stead.AttrInt(1), stead.AttrString("1")),
		"ordered bool":   stead.Where("k", stead.AttrLt, stead.AttrBool(true)),
		"no value":       stead.Where("k", stead.AttrEq),
		"bad filter key": stead.Where("k k", stead.AttrEq, stead.AttrInt(1)),
	} {
		_, err := h.s.List(h.ctx, stead.ListFilter{Attributes: []stead.AttrFilter{f}})
		h.wantErr("list: "+what, err, stead.ErrInvalid)
		_, err = h.s.Count(h.ctx, stead.ListFilter{Attributes: []stead.AttrFilter{f}})
		h.wantErr("count: "+what, err, stead.ErrInvalid)
	}
}

// testAttrsListed holds a listing's Summary.Attributes to what each execution carries when the
// listing asks (ListFilter.WithAttributes), on every page size and under attribute conditions,
// and to nil when it does not; asking selects nothing, so cursors page across it.
func testAttrsListed(h *harness) {
	exes, attrs := h.seedAttrs()
	byID := map[string]map[string]stead.AttrValue{}
	for name, exe := range exes {
		byID[exe.ID] = attrs[name]
	}
	want := func(what string, items []stead.Summary, asked bool) {
		h.Helper()
		for _, it := range items {
			w := byID[it.ID]
			if !asked {
				w = nil
			}
			if len(w) == 0 && it.Attributes != nil {
				h.Fatalf("%s: %s listed attributes %v, want nil", what, it.ID, it.Attributes)
			}
			if !maps.Equal(it.Attributes, w) {
				h.Fatalf("%s: %s listed attributes %v, want %v", what, it.ID, it.Attributes, w)
			}
		}
	}
	for _, limit := range []int{1, 3, 0} {
		f := stead.ListFilter{IDPrefix: h.prefix, Limit: limit, WithAttributes: true}
		items := h.collect(f)
		if len(items) != len(exes) {
			h.Fatalf("page size %d: listed %d executions, want %d", limit, len(items), len(exes))
		}
		want(fmt.Sprintf("page size %d", limit), items, true)
		f.WithAttributes = false
		want(fmt.Sprintf("page size %d, not asked", limit), h.collect(f), false)
	}
	cond := []stead.AttrFilter{stead.Where("region", stead.AttrEq, stead.AttrString("eu"))}
	items := h.collect(stead.ListFilter{IDPrefix: h.prefix, Attributes: cond, WithAttributes: true, Limit: 2})
	if got, w := len(items), len(reference(attrs, cond...)); got != w {
		h.Fatalf("under region=eu: listed %d, want %d", got, w)
	}
	want("under region=eu", items, true)

	// A cursor of a page without them continues a listing with them, and back.
	p, err := h.s.List(h.ctx, stead.ListFilter{IDPrefix: h.prefix, Limit: 4})
	if err != nil {
		h.Fatalf("List: %v", err)
	}
	next, err := h.s.List(h.ctx, stead.ListFilter{IDPrefix: h.prefix, Limit: 4, Cursor: p.NextCursor, WithAttributes: true})
	if err != nil {
		h.Fatalf("List with attributes from a cursor without: %v", err)
	}
	if len(next.Items) != 4 || next.Items[0].ID <= p.Items[3].ID {
		h.Fatalf("the cursor without attributes led to %q", summaryIDs(next.Items))
	}
	want("from a cursor without", next.Items, true)

	// A commit that changes them shows in the next listing; the caller's copy is its own.
	exe := exes["e01"]
	h.commit(exe, stead.Bundle{Attributes: map[string]stead.AttrValue{"region": {}, "stage": stead.AttrString("payment")}})
	changed := maps.Clone(byID[exe.ID])
	delete(changed, "region")
	changed["stage"] = stead.AttrString("payment")
	byID[exe.ID] = changed
	items = h.collect(stead.ListFilter{IDPrefix: exe.ID, WithAttributes: true})
	want("after a change", items, true)
	items[0].Attributes["stage"] = stead.AttrString("changed by the caller")
	want("after the caller changed its copy", h.collect(stead.ListFilter{IDPrefix: exe.ID, WithAttributes: true}), true)
}
