package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/bulk"
	"github.com/steadhq/stead/worker"
)

// bulkOps are the operations the console starts as bulk jobs. Reset and set-state stay on the
// command line, as for one execution. Retry is offered although the console may lack the
// definitions' machines: the job's worker applies it, and refuses, with the reason counted, a
// target whose definition it does not run.
var bulkOps = []bulk.Op{bulk.OpSuspend, bulk.OpResume, bulk.OpCancel, bulk.OpRetry, bulk.OpSend, bulk.OpPurge}

// bulkText is what the list's link to each operation says.
var bulkText = map[bulk.Op]string{
	bulk.OpSuspend: "suspend all…", bulk.OpResume: "resume all…", bulk.OpCancel: "cancel all…",
	bulk.OpRetry: "retry all failed…", bulk.OpSend: "send an event to all…", bulk.OpPurge: "purge all finished…",
}

// bulkPage is the confirmation of a bulk job: what it would do, to how many, and the form that
// starts it. A send first asks for its event (AskEvent), then confirms it.
type bulkPage struct {
	Op       bulk.Op
	Filter   string // the list's query the job's filter comes from, sent back by the form
	ListURL  string
	Estimate bulk.Estimate
	ByStatus []countLink
	Form     filterForm
	// EventKind and EventData are a send's event, as typed.
	EventKind, EventData string
	AskEvent             bool
	Hidden               []attrCell // the filter's fields, carried by the event's form
}

// bulkSpec reads a job's spec from a list query, an operation and, for a send, the event's kind
// and data (a JSON document, empty for none): the filter the list shows, without its page (a job
// pages itself). What bulk refuses in the event, it refuses itself.
func bulkSpec(query, op, kind, data string) (bulk.Spec, filterForm, error) {
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
		return bulk.Spec{}, form, badRequestf("unknown bulk operation %q: want suspend, resume, cancel, retry, send or purge", op)
	}
	spec := bulk.Spec{Op: bulk.Op(op), Filter: f}
	if spec.Op == bulk.OpSend {
		spec.EventKind = strings.TrimSpace(kind)
		if data = strings.TrimSpace(data); data != "" {
			if !json.Valid([]byte(data)) {
				return spec, form, badRequestf("event data is not JSON: %.80q", data)
			}
			spec.EventData = json.RawMessage(data)
		}
	} else if kind != "" || data != "" {
		return spec, form, badRequestf("%s sends no event: drop its kind and data", op)
	}
	return spec, form, nil
}

// createClient is the client that creates executions (bulk jobs, a schedule's trigger), or nil
// when this console cannot: it is read-only, or its controller is not a worker.Client. Its Known
// is left empty: the execution runs on the workers that have its definition (a job on those that
// registered the bulk machine), not here.
func (s *Server) createClient() *worker.Client {
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
	if s.createClient() == nil {
		http.Error(w, "forbidden: this console does not start bulk jobs (read-only, or its controller is not a worker.Client)", http.StatusForbidden)
		return
	}
	q := r.URL.Query()
	op, kind, data := q.Get("op"), q.Get("kind"), q.Get("data")
	for _, k := range []string{"op", "kind", "data"} {
		q.Del(k)
	}
	spec, form, err := bulkSpec(q.Encode(), op, kind, data)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if spec.Op == bulk.OpSend && spec.EventKind == "" {
		// The count comes with the event: the confirmation is of the job exactly as it starts.
		bp := bulkPage{Op: spec.Op, Filter: form.query().Encode(), ListURL: s.path("/?") + form.query().Encode(),
			Form: form, AskEvent: true}
		q := form.query()
		for _, k := range slices.Sorted(maps.Keys(q)) {
			for _, v := range q[k] {
				bp.Hidden = append(bp.Hidden, attrCell{Key: k, Value: v})
			}
		}
		s.render(w, http.StatusOK, "bulk", s.page(w, r, "Bulk send", bp))
		return
	}
	est, err := bulk.DryRun(r.Context(), s.cfg.Store, spec)
	if err != nil {
		s.fail(w, r, bulkRefusal(err))
		return
	}
	bp := bulkPage{Op: spec.Op, Filter: form.query().Encode(), ListURL: s.path("/?") + form.query().Encode(),
		Estimate: est, Form: form, EventKind: spec.EventKind, EventData: string(spec.EventData)}
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
	c := s.createClient()
	if c == nil {
		http.Error(w, "forbidden: this console does not start bulk jobs (read-only, or its controller is not a worker.Client)", http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if !s.csrfOK(r) {
		http.Error(w, "forbidden: missing or bad CSRF token, or a cross-site request", http.StatusForbidden)
		return
	}
	spec, _, err := bulkSpec(r.PostFormValue("filter"), r.PostFormValue("op"), r.PostFormValue("kind"), r.PostFormValue("data"))
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
