package console

import (
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/bulk"
)

// allStatuses are the statuses in lifecycle order, for the filter's checkboxes and the counts.
var allStatuses = []stead.Status{
	stead.StatusPending, stead.StatusRunning, stead.StatusSuspended, stead.StatusCancelling,
	stead.StatusDone, stead.StatusFailed, stead.StatusCancelled,
}

// filterForm is the list page's query string, as typed: it refills the form and builds links.
type filterForm struct {
	Definition string
	Statuses   map[stead.Status]bool
	Roots      bool
	Prefix     string
	// Windows by field name (created_from, created_before, …), as typed.
	Windows map[string]string
	Limit   string
	// Where are the attribute conditions, one a field, as typed (blank fields dropped).
	Where []string
}

var windowFields = []string{"created_from", "created_before", "updated_from", "updated_before", "finished_from", "finished_before"}

// parseFilter reads the list page's query: definition, status (repeated), roots, prefix, the
// six window bounds, attribute conditions (where, repeated, in the syntax of the CLI's --where:
// customer=42, amount>100, tier in (gold, silver)), limit and cursor. What the console cannot read is a badRequest; what the
// store refuses (an empty window, a forged cursor) it refuses itself, as ErrInvalid.
func parseFilter(q url.Values, now time.Time) (stead.ListFilter, filterForm, error) {
	var f stead.ListFilter
	form := filterForm{Statuses: map[stead.Status]bool{}, Windows: map[string]string{}}
	f.DefinitionID = strings.TrimSpace(q.Get("definition"))
	form.Definition = f.DefinitionID
	for _, v := range q["status"] {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p == "" {
				continue
			}
			st := stead.Status(p)
			if !st.Valid() {
				return f, form, badRequestf("unknown status %q: want one of pending, running, suspended, cancelling, done, failed, cancelled", p)
			}
			if !form.Statuses[st] {
				f.Statuses = append(f.Statuses, st)
			}
			form.Statuses[st] = true
		}
	}
	switch r := q.Get("roots"); r {
	case "", "0", "false":
	case "1", "on", "true":
		f.RootsOnly, form.Roots = true, true
	default:
		return f, form, badRequestf("roots %q: want 1 or 0", r)
	}
	f.IDPrefix = q.Get("prefix")
	form.Prefix = f.IDPrefix
	bounds := []*time.Time{&f.Created.From, &f.Created.Before, &f.Updated.From, &f.Updated.Before, &f.Finished.From, &f.Finished.Before}
	for i, name := range windowFields {
		v := strings.TrimSpace(q.Get(name))
		form.Windows[name] = v
		if v == "" {
			continue
		}
		t, err := parseWhen(v, now)
		if err != nil {
			return f, form, badRequestf("%s %q: %v", strings.ReplaceAll(name, "_", " "), v, err)
		}
		*bounds[i] = t
	}
	for _, v := range q["where"] {
		if v = strings.TrimSpace(v); v == "" {
			continue
		}
		// Kept as typed even when refused, so that the form shows what to correct.
		form.Where = append(form.Where, v)
		c, err := stead.ParseAttributeFilter(v)
		if err != nil {
			return f, form, badRequestf("%s", plain(err))
		}
		f.Attributes = append(f.Attributes, c)
	}
	if len(f.Attributes) > stead.MaxAttributes {
		return f, form, badRequestf("%d attribute conditions: at most %d", len(f.Attributes), stead.MaxAttributes)
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > stead.MaxListLimit {
			return f, form, badRequestf("limit %q: want a number from 1 to %d", v, stead.MaxListLimit)
		}
		f.Limit, form.Limit = n, v
	}
	f.Cursor = q.Get("cursor")
	return f, form, nil
}

// parseWhen reads a point in time: RFC 3339, a browser's datetime-local value or a date (both
// in UTC), or an age before now (a Go duration, or days such as 30d).
func parseWhen(s string, now time.Time) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04", "2006-01-02T15:04:05", time.DateOnly} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.ParseFloat(days, 64); err == nil && n >= 0 && n < 1e6 {
			return now.Add(-time.Duration(n * 24 * float64(time.Hour))), nil
		}
	} else if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, badRequestf("want RFC 3339 (2026-01-02T15:04:05Z), a date (2026-01-02) or an age (36h, 30d)")
}

// query is the form as a query string, with the extra pairs set (a cursor, a status).
func (f filterForm) query(extra ...string) url.Values {
	q := url.Values{}
	if f.Definition != "" {
		q.Set("definition", f.Definition)
	}
	for _, st := range allStatuses {
		if f.Statuses[st] {
			q.Add("status", string(st))
		}
	}
	if f.Roots {
		q.Set("roots", "1")
	}
	if f.Prefix != "" {
		q.Set("prefix", f.Prefix)
	}
	for _, name := range windowFields {
		if v := f.Windows[name]; v != "" {
			q.Set(name, v)
		}
	}
	for _, w := range f.Where {
		q.Add("where", w)
	}
	if f.Limit != "" {
		q.Set("limit", f.Limit)
	}
	for i := 0; i+1 < len(extra); i += 2 {
		q.Set(extra[i], extra[i+1])
	}
	return q
}

type listPage struct {
	Form     filterForm
	Statuses []stead.Status
	Items    []listRow
	// Attrs is set when the store lists attributes (a stead.AttributeBackend): the rows carry
	// them, AttrKeys (the keys the filter's conditions name, in their order) each in a column
	// of its own, and every other attribute in a compact cell.
	Attrs       bool
	AttrKeys    []string
	Columns     int // the table's, for the empty row's span
	Counts      stead.Counts
	CountsOK    bool
	ByStatus    []countLink
	ByDef       []countLink
	NextURL     string
	FirstURL    string
	Paged       bool // this is not the first page
	Definitions []string
	// Bulk links the confirmation of a bulk job over this filter, per operation; empty when
	// this console does not start jobs.
	Bulk []bulkLink
}

// bulkLink is the list's link to the confirmation of one operation over its filter.
type bulkLink struct {
	Op        bulk.Op
	Text, URL string
}

// listRow is one execution of the list with its attribute cells.
type listRow struct {
	stead.Summary
	Cols   []attrCell // one per listPage.AttrKeys, empty where it has none
	Others []attrCell // its other attributes, by key
}

// attrCell is one attribute of a row, linking the list narrowed to its value.
type attrCell struct {
	Key, Value, Kind string
	URL              string
}

type countLink struct {
	Label string
	N     int64
	URL   string
}

func (s *Server) handleList(w http.ResponseWriter, r *http.Request) {
	f, form, err := parseFilter(r.URL.Query(), time.Now())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ab, attrs := s.cfg.Store.Backend().(stead.AttributeBackend)
	attrs = attrs && ab.FiltersAttributes()
	f.WithAttributes = attrs
	p, err := s.cfg.Store.List(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	lp := listPage{Form: form, Statuses: allStatuses, Paged: f.Cursor != "", Attrs: attrs, Columns: 8}
	if attrs {
		for _, c := range f.Attributes {
			if !slices.Contains(lp.AttrKeys, c.Key) {
				lp.AttrKeys = append(lp.AttrKeys, c.Key)
			}
		}
		lp.Columns += len(lp.AttrKeys) + 1
	}
	lp.Items = make([]listRow, len(p.Items))
	for i, sm := range p.Items {
		lp.Items[i] = s.listRow(sm, form, lp.AttrKeys)
	}
	if p.NextCursor != "" {
		lp.NextURL = s.path("/?") + form.query("cursor", p.NextCursor).Encode()
	}
	lp.FirstURL = s.path("/?") + form.query().Encode()
	// The counts are of the filter, not of the page; a failure to count does not hide the page.
	if c, err := s.cfg.Store.Count(r.Context(), f); err != nil {
		s.log.Warn("console: count", "err", err)
	} else {
		lp.Counts, lp.CountsOK = c, true
		for _, st := range allStatuses {
			if n := c.ByStatus[st]; n > 0 {
				one := form
				one.Statuses = map[stead.Status]bool{st: true}
				lp.ByStatus = append(lp.ByStatus, countLink{string(st), n, s.path("/?") + one.query().Encode()})
			}
		}
		defs := make([]string, 0, len(c.ByDefinition))
		for d := range c.ByDefinition {
			defs = append(defs, d)
		}
		slices.Sort(defs)
		for _, d := range defs {
			one := form
			one.Definition = d
			lp.ByDef = append(lp.ByDef, countLink{d, c.ByDefinition[d], s.path("/?") + one.query().Encode()})
		}
	}
	if s.createClient() != nil {
		for _, op := range bulkOps {
			q := form.query("op", string(op))
			q.Del("limit")
			lp.Bulk = append(lp.Bulk, bulkLink{Op: op, Text: bulkText[op], URL: s.path("/bulk?") + q.Encode()})
		}
	}
	for id := range s.cfg.Definitions {
		lp.Definitions = append(lp.Definitions, id)
	}
	slices.Sort(lp.Definitions)
	s.render(w, http.StatusOK, "list", s.page(w, r, "Executions", lp))
}

// listRow puts an execution's attributes in the cells of the list: the keys of the filter's
// columns in their order, the others sorted by key. Each links the list narrowed by its value
// (the filter as shown, plus key=value, from the first page).
func (s *Server) listRow(sm stead.Summary, form filterForm, keys []string) listRow {
	row := listRow{Summary: sm, Cols: make([]attrCell, len(keys))}
	cell := func(k string, v stead.AttrValue) attrCell {
		where := stead.Where(k, stead.AttrEq, v).String() // read back by the list's where field
		narrowed := form
		if !slices.Contains(form.Where, where) {
			narrowed.Where = append(slices.Clip(form.Where), where)
		}
		return attrCell{Key: k, Value: v.String(), Kind: v.Kind().String(), URL: s.path("/?") + narrowed.query().Encode()}
	}
	for i, k := range keys {
		if v, ok := sm.Attributes[k]; ok {
			row.Cols[i] = cell(k, v)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(sm.Attributes)) {
		if !slices.Contains(keys, k) {
			row.Others = append(row.Others, cell(k, sm.Attributes[k]))
		}
	}
	return row
}
