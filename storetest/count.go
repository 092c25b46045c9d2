package storetest

import (
	"errors"
	"maps"

	"github.com/steadhq/stead"
)

// The rules of Store.Count. They join the list group: a count is a listing's tally.
var countRules = []rule{
	{name: "counts_match_the_listing", run: testCountMatchesListing},
	{name: "counts_refuse_bad_filters", run: testCountRefusesBadFilters},
}

// testCountMatchesListing counts under each filter of the listing matrix and holds the totals,
// by status and by definition, to a tally of what List pages out under the same filter.
func testCountMatchesListing(h *harness) {
	h.seedList()
	p := h.prefix
	filters := map[string]stead.ListFilter{
		"all":              {IDPrefix: p},
		"definition":       {IDPrefix: p, DefinitionID: h.id("d2")},
		"statuses":         {IDPrefix: p, Statuses: []stead.Status{stead.StatusRunning, stead.StatusFailed}},
		"roots":            {IDPrefix: p, RootsOnly: true},
		"prefix":           {IDPrefix: h.id("e0")},
		"finished_window":  {IDPrefix: p, Finished: stead.TimeRange{From: finishedAt}},
		"matches_nothing":  {IDPrefix: p, DefinitionID: h.id("none")},
		"every_filter":     {IDPrefix: p, DefinitionID: h.id("d2"), RootsOnly: true, Statuses: []stead.Status{stead.StatusRunning}},
		"limit_and_cursor": {IDPrefix: p, Limit: 1},
	}
	for name, f := range filters {
		got, err := h.s.Count(h.ctx, f)
		if err != nil {
			h.Errorf("%s: count: %v", name, err)
			continue
		}
		f.Limit = 0
		want := stead.Counts{ByStatus: map[stead.Status]int64{}, ByDefinition: map[string]int64{}}
		for _, s := range h.collect(f) {
			want.Total++
			want.ByStatus[s.Status]++
			want.ByDefinition[s.DefinitionID]++
		}
		if got.Total != want.Total || !maps.Equal(got.ByStatus, want.ByStatus) || !maps.Equal(got.ByDefinition, want.ByDefinition) {
			h.Errorf("%s: count = %+v, the listing holds %+v", name, got, want)
		}
	}
	if got, err := h.s.Count(h.ctx, stead.ListFilter{IDPrefix: p}); err == nil && got.Total != int64(len(listSeed)) {
		h.Errorf("count of the whole matrix = %d, want %d", got.Total, len(listSeed))
	}
}

// testCountRefusesBadFilters holds Count to List's checks: a bad filter is ErrInvalid.
func testCountRefusesBadFilters(h *harness) {
	for name, f := range map[string]stead.ListFilter{
		"unknown_status": {Statuses: []stead.Status{"bogus"}},
		"nul_definition": {DefinitionID: "d\x00"},
		"bad_utf8":       {IDPrefix: "\xff"},
		"empty_window":   {Created: stead.TimeRange{From: finishedAt, Before: finishedAt}},
	} {
		if _, err := h.s.Count(h.ctx, f); !errors.Is(err, stead.ErrInvalid) {
			h.Errorf("%s: count = %v, want ErrInvalid", name, err)
		}
	}
}
