package console

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/schedule"
	"github.com/steadhq/stead/schedule/schedworker"
)

// Page sizes: of the schedule list (a Store.List is at most schedule.MaxList, and a page asks
// for one more to know whether another follows), and of a schedule's executions.
const (
	defaultSchedulePage = 100
	maxSchedulePage     = 500
	scheduleExecutions  = 20
)

// scheduleOps are the schedule page's buttons. Backfill takes a range an operator should type
// with care, and update and delete change what the schedule is: they stay on the command line.
var scheduleOps = []string{"pause", "resume", "trigger"}

// errNoSchedules is the answer of every schedule page on a store whose backend keeps none.
var errNoSchedules = errors.New("schedules are not available on this backend: its store keeps none (memstore, sqlitestore and pgstore do)")

type schedulesPage struct {
	Unavailable string // why there is no list, when the backend keeps no schedules
	Items       []scheduleRow
	NextURL     string
	FirstURL    string
	Paged       bool
}

// scheduleRow is a schedule as the list and its page show it.
type scheduleRow struct {
	*schedule.Schedule
	Timing  string
	URL     string // the schedule's page
	LastURL string // the page of its last tick's execution, when it has one
}

type schedulePage struct {
	scheduleRow
	Context string // pretty JSON
	// LastStatus is the status of the last tick's execution ("" when there is none, "purged"
	// when it is gone).
	LastStatus string
	Executions []stead.Summary
	NextURL    string
	FirstURL   string
	Paged      bool
	// AllURL lists its executions on the executions page, with the counts by status; RecentURL
	// those created in the last day.
	AllURL, RecentURL string
	Ops               []string
}

// schedules returns the schedule store beside the console's executions, or errNoSchedules.
func (s *Server) schedules() (*schedule.Store, error) {
	if s.sched == nil {
		return nil, errNoSchedules
	}
	return s.sched, nil
}

func (s *Server) row(sc *schedule.Schedule) scheduleRow {
	r := scheduleRow{Schedule: sc, URL: s.path("/schedule?") + url.Values{"id": {sc.ID}}.Encode()}
	if sc.Every > 0 {
		r.Timing = "every " + sc.Every.String()
	} else {
		r.Timing = sc.Cron + " (" + sc.TimeZone + ")"
	}
	if sc.LastExecutionID != "" {
		r.LastURL = s.path("/execution?") + url.Values{"id": {sc.LastExecutionID}}.Encode()
	}
	return r
}

// handleSchedules lists the schedules by id, a page at a time: after (the last id of the
// previous page) and limit.
func (s *Server) handleSchedules(w http.ResponseWriter, r *http.Request) {
	st, err := s.schedules()
	if err != nil {
		s.render(w, http.StatusOK, "schedules", s.page(w, r, "Schedules", schedulesPage{Unavailable: err.Error()}))
		return
	}
	q := r.URL.Query()
	after, limit := q.Get("after"), defaultSchedulePage
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxSchedulePage {
			s.fail(w, r, badRequestf("limit %q: want a number from 1 to %d", v, maxSchedulePage))
			return
		}
		limit = n
	}
	scs, err := st.List(r.Context(), after, limit+1)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	sp := schedulesPage{Paged: after != ""}
	page := url.Values{}
	if q.Get("limit") != "" {
		page.Set("limit", q.Get("limit"))
	}
	sp.FirstURL = s.path("/schedules?") + page.Encode()
	if len(scs) > limit {
		scs = scs[:limit]
		page.Set("after", scs[limit-1].ID)
		sp.NextURL = s.path("/schedules?") + page.Encode()
	}
	for _, sc := range scs {
		sp.Items = append(sp.Items, s.row(sc))
	}
	s.render(w, http.StatusOK, "schedules", s.page(w, r, "Schedules", sp))
}

// handleSchedule shows one schedule: its configuration, its last tick's execution with its
// status, and its executions (the ids <schedule id>@…) a page at a time, in id order: the ticks
// oldest first, then the manual triggers.
func (s *Server) handleSchedule(w http.ResponseWriter, r *http.Request) {
	st, err := s.schedules()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	id := q.Get("id")
	if id == "" {
		s.fail(w, r, badRequestf("no schedule id: want /schedule?id=<id>"))
		return
	}
	sc, err := st.Get(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	sp := schedulePage{scheduleRow: s.row(sc), Context: pretty(sc.Context)}
	if sc.LastExecutionID != "" {
		exe, err := s.cfg.Store.Load(r.Context(), sc.LastExecutionID)
		switch {
		case errors.Is(err, stead.ErrNotFound):
			sp.LastStatus = "purged"
		case err != nil:
			s.fail(w, r, err)
			return
		default:
			sp.LastStatus = string(exe.Status)
		}
	}
	prefix := sc.ID + "@"
	p, err := s.cfg.Store.List(r.Context(), stead.ListFilter{IDPrefix: prefix, Limit: scheduleExecutions, Cursor: q.Get("cursor")})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	for _, e := range p.Items {
		// A schedule whose id is this one's and "@…" shares the prefix: its executions carry
		// a second "@".
		if !strings.Contains(e.ID[len(prefix):], "@") {
			sp.Executions = append(sp.Executions, e)
		}
	}
	sp.Paged = q.Get("cursor") != ""
	sp.FirstURL = sp.URL
	if p.NextCursor != "" {
		sp.NextURL = s.path("/schedule?") + url.Values{"id": {sc.ID}, "cursor": {p.NextCursor}}.Encode()
	}
	sp.AllURL = s.path("/?") + url.Values{"prefix": {prefix}}.Encode()
	sp.RecentURL = s.path("/?") + url.Values{"prefix": {prefix}, "created_from": {"24h"}}.Encode()
	if !s.cfg.ReadOnly {
		if sc.Paused {
			sp.Ops = append(sp.Ops, "resume")
		} else {
			sp.Ops = append(sp.Ops, "pause")
		}
		if s.createClient() != nil {
			sp.Ops = append(sp.Ops, "trigger")
		}
	}
	s.render(w, http.StatusOK, "schedule", s.page(w, r, sc.ID, sp))
}

// handleScheduleOp applies a schedule's button: pause, resume or trigger. It is guarded as the
// execution's buttons are: refused with 403 in read-only mode, and it needs a same-origin
// request with the CSRF token of its cookie. Pause and resume show the schedule again; trigger
// shows the execution it started.
func (s *Server) handleScheduleOp(w http.ResponseWriter, r *http.Request) {
	if s.cfg.ReadOnly {
		http.Error(w, "forbidden: the console is read-only", http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if !s.csrfOK(r) {
		http.Error(w, "forbidden: missing or bad CSRF token, or a cross-site request", http.StatusForbidden)
		return
	}
	st, err := s.schedules()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	id, op := r.PostFormValue("id"), r.PostFormValue("op")
	if id == "" {
		s.fail(w, r, badRequestf("no schedule id"))
		return
	}
	if !slices.Contains(scheduleOps, op) {
		s.fail(w, r, badRequestf("unknown command %q: want pause, resume or trigger", op))
		return
	}
	ctx := r.Context()
	switch op {
	case "pause":
		_, err = st.Pause(ctx, id)
	case "resume":
		_, err = st.Resume(ctx, id)
	case "trigger":
		c := s.createClient()
		if c == nil {
			http.Error(w, "forbidden: this console does not start executions (its controller is not a worker.Client)", http.StatusForbidden)
			return
		}
		var exe *stead.Execution
		if exe, err = schedworker.Runner(st, c).Trigger(ctx, id); err == nil {
			s.log.Info("console: schedule triggered", "schedule", id, "execution", exe.ID)
			http.Redirect(w, r, s.path("/execution?")+url.Values{"id": {exe.ID}}.Encode(), http.StatusSeeOther)
			return
		}
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.log.Info("console: schedule command", "op", op, "schedule", id)
	http.Redirect(w, r, s.path("/schedule?")+url.Values{"id": {id}}.Encode(), http.StatusSeeOther)
}
