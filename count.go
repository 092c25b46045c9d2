package stead

import (
	"context"
	"fmt"
)

// Counter is what a Backend implements to count a listing in the database: one GROUP BY of the
// matching rows by definition and status, where the Store would otherwise page through every
// summary. It is optional; Store.Count checks for it with a type assertion and pages when it is
// missing, so a backend written elsewhere counts correctly without it, only slower.
type Counter interface {
	// Count returns one row per (definition, status) pair that q matches, with how many
	// executions have it, in any order. q is checked like List's; After is empty and Limit
	// zero, and both are to be ignored.
	Count(ctx context.Context, q ListQuery) ([]CountRow, error)
}

// CountRow is one group of a Counter's answer.
type CountRow struct {
	DefinitionID string
	Status       Status
	N            int64
}

// Counts is how many executions a filter matches, in all and by status and by definition.
// The maps hold only what was found (no zero entries) and are never nil.
type Counts struct {
	Total        int64
	ByStatus     map[Status]int64
	ByDefinition map[string]int64
}

// Count counts the executions f selects, by status and by definition. f is checked like List's;
// its Limit and Cursor are ignored. A backend that implements Counter counts in one query;
// another is paged through, summaries only, at MaxListLimit a page.
func (s *Store) Count(ctx context.Context, f ListFilter) (Counts, error) {
	f.Limit, f.Cursor = 0, ""
	l, err := prepareList(f)
	if err != nil {
		return Counts{}, err
	}
	if err := s.canFilter(l.query); err != nil {
		return Counts{}, err
	}
	if err := s.enter(ctx, "count"); err != nil {
		return Counts{}, err
	}
	defer s.leave()
	q := l.query
	q.Limit = 0
	c := Counts{ByStatus: map[Status]int64{}, ByDefinition: map[string]int64{}}
	add := func(def string, st Status, n int64) {
		if n <= 0 {
			return
		}
		c.Total += n
		c.ByStatus[st] += n
		c.ByDefinition[def] += n
	}
	if cb, ok := s.b.(Counter); ok {
		rows, err := cb.Count(ctx, q)
		if err != nil {
			return Counts{}, err
		}
		for _, r := range rows {
			add(r.DefinitionID, r.Status, r.N)
		}
		return c, nil
	}
	q.Limit = MaxListLimit
	for {
		items, err := s.b.List(ctx, q)
		if err != nil {
			return Counts{}, err
		}
		for i := range items {
			add(items[i].DefinitionID, items[i].Status, 1)
		}
		if len(items) < q.Limit {
			return c, nil
		}
		next := items[len(items)-1].ID
		if next <= q.After {
			return Counts{}, fmt.Errorf("stead: count: the backend listed %q after %q", next, q.After)
		}
		q.After = next
	}
}
