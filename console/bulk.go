package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/bulk"
	"github.com/steadhq/stead/worker"
)

// bulkOps are the operations the console starts as bulk jobs: its own buttons, minus retry,
// which runs definitions' actions a job's worker may lack.
var bulkOps = []bulk.Op{bulk.OpSuspend, bulk.OpResume, bulk.OpCancel}

// bulkPage is the confirmation of a bulk job: what it would do, to how many, and the form that
// starts it.
type bulkPage struct {
	Op       bulk.Op
	Filter   string // the list's query the job's filter comes from, sent back by the form
	ListURL  string
	Estimate bulk.Estimate
	ByStatus []countLink
	Form     filterForm
}

// bulkSpec reads a job's spec from a list query and an operation: the filter the list shows,
// without its page (a job pages itself).
func bulkSpec(query, op string) (bulk.Spec, filterForm, error) {
	q, err := url.ParseQuery(query)
	if err != nil {
		return bulk.Spec{}, filterForm{}, badRequestf("filter: %v", err)
	}
	q.Del("cursor")
	q.Del("limit")
	f, form, err := parseFilter(q, time.Now())
	if err != nil {
		return bulk.Spec{}, form, err
	}
	form.Limit = ""
	if !slices.Contains(bulkOps, bulk.Op(op)) {
		return bulk.Spec{}, form, badRequestf("unknown bulk operation %q: want suspend, resume or cancel", op)
	}
	return bulk.Spec{Op: bulk.Op(op), Filter: f}, form, nil
}

// bulkClient is the client that starts jobs, or nil when this console cannot: it is read-only,
// or its controller is not a worker.Client (a job is an execution it must create). Its Known is
// left empty: the job runs on the workers that registered the bulk machine, not here.
func (s *Server) bulkClient() *worker.Client {
	if s.cfg.ReadOnly {
		return nil
	}
	c, ok := s.cfg.Control.(*worker.Client)
	if !ok || c.Store == nil || c.Transport == nil {
		return nil
	}
	return &worker.Client{Store: c.Store, Transport: c.Transport, Clock: c.Clock, Logger: c.Logger}
}

// handleBulkConfirm shows what a bulk job over the list's filter would do: the dry run's count
// of the executions it selects, by status, and of those whose status takes the operation. It
// writes nothing; its form starts the job.
func (s *Server) handleBulkConfirm(w http.ResponseWriter, r *http.Request) {
	if s.bulkClient() == nil {
		http.Error(w, "forbidden: this console does not start bulk jobs (read-only, or its controller is not a worker.Client)", http.StatusForbidden)
		return
	}
	q := r.URL.Query()
	op := q.Get("op")
	q.Del("op")
	spec, form, err := bulkSpec(q.Encode(), op)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	est, err := bulk.DryRun(r.Context(), s.cfg.Store, spec)
	if err != nil {
		s.fail(w, r, bulkRefusal(err))
		return
	}
	bp := bulkPage{Op: spec.Op, Filter: form.query().Encode(), ListURL: s.path("/?") + form.query().Encode(),
		Estimate: est, Form: form}
	for _, st := range allStatuses {
		if n := est.ByStatus[st]; n > 0 {
			bp.ByStatus = append(bp.ByStatus, countLink{Label: string(st), N: n})
		}
	}
	s.render(w, http.StatusOK, "bulk", s.page(w, r, fmt.Sprintf("Bulk %s", spec.Op), bp))
}

// handleBulkStart starts the job the confirmation page describes, guarded as the buttons are
// (read-only refuses it, a same-origin request with the CSRF token), and shows the job's page:
// a job is an execution.
func (s *Server) handleBulkStart(w http.ResponseWriter, r *http.Request) {
	c := s.bulkClient()
	if c == nil {
		http.Error(w, "forbidden: this console does not start bulk jobs (read-only, or its controller is not a worker.Client)", http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if !s.csrfOK(r) {
		http.Error(w, "forbidden: missing or bad CSRF token, or a cross-site request", http.StatusForbidden)
		return
	}
	spec, _, err := bulkSpec(r.PostFormValue("filter"), r.PostFormValue("op"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	job, err := bulk.Start(r.Context(), c, spec)
	if err != nil && !errors.Is(err, worker.ErrStartDeferred) {
		s.fail(w, r, bulkRefusal(err))
		return
	}
	s.log.Info("console: bulk job", "job", job.ID, "op", spec.Op, "total", job.Progress.Total)
	http.Redirect(w, r, s.path("/execution")+"?"+url.Values{"id": {job.ID}}.Encode(), http.StatusSeeOther)
}

// bulkRefusal turns bulk's own refusal of a spec (a filter without a criterion, one that
// selects jobs) into words for the operator; a store's errors stay hidden.
func bulkRefusal(err error) error {
	var se *stead.StatusError
	if errors.Is(err, stead.ErrInvalid) && !errors.As(err, &se) {
		return refusal{"the bulk job was refused: " + plain(err)}
	}
	return err
}
