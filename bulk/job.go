package bulk

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/internal/check"
	"github.com/steadhq/stead/worker"
)

// DefinitionID is the definition id of every bulk job: a job is an execution of it, so it is
// listed, inspected, suspended and cancelled like any other execution. Its executions are never
// the targets of a job.
const DefinitionID = "stead.bulk"

// Op names what a job does to each execution it selects.
type Op string

// The operations. The control commands are worker.Client.Control's; OpSend publishes an event
// to each target; OpPurge deletes each target's whole tree (retention.PurgeTree).
const (
	OpCancel   Op = "cancel"
	OpSuspend  Op = "suspend"
	OpResume   Op = "resume"
	OpRetry    Op = "retry"
	OpReset    Op = "reset"
	OpSetState Op = "set-state"
	OpSend     Op = "send"
	OpPurge    Op = "purge"
)

// Ops returns every operation.
func Ops() []Op {
	return []Op{OpCancel, OpSuspend, OpResume, OpRetry, OpReset, OpSetState, OpSend, OpPurge}
}

// Limits of a job.
const (
	// MaxJobIDLen bounds a job id: the command id every target applies is derived from it and
	// must stay within worker.MaxCommandIDLen.
	MaxJobIDLen = 200
	// DefaultPageSize is how many targets a step applies when Spec.PageSize is 0.
	DefaultPageSize = 100
	// MaxRate bounds Spec.Rate, in targets per second.
	MaxRate = 1e6
	// MaxRefusals is how many refused targets a job keeps by id, with their reason; beyond it
	// only the counts by reason grow.
	MaxRefusals = 100
	// maxReasons bounds the distinct reasons a job counts; the rest count as "other".
	maxReasons = 32
)

// Spec is what a job does: an operation over the executions a listing filter selects.
type Spec struct {
	// ID is the job's id, which is also the id of its execution; empty: a fresh one. Starting a
	// job under an id that is taken is ErrAlreadyExists. The targets apply a command id derived
	// from it (CommandID), so a job started under the id of an earlier, purged one skips the
	// targets that one reached, as a control command sent again with its id does.
	ID string `json:"-"`
	Op Op     `json:"op"`
	// Filter selects the targets, as stead.Store.List does; its Limit and Cursor must be zero
	// (the job pages itself). It needs at least one criterion, and may not select bulk jobs.
	// Set RootsOnly for suspend, resume and cancel: they reach children through their parents.
	Filter stead.ListFilter `json:"filter"`
	// State is the state set-state moves each target to (OpSetState only).
	State string `json:"state,omitempty"`
	// Context is the context reset starts each target from, a JSON object; nil: each target's
	// start context (OpReset only).
	Context json.RawMessage `json:"context,omitempty"`
	// EventKind and EventData are the event OpSend publishes to each target.
	EventKind string          `json:"event_kind,omitempty"`
	EventData json.RawMessage `json:"event_data,omitempty"`
	// Rate bounds how many targets the job applies per second (0: no bound). A rate-limited job
	// waits between pages on a durable timer, so the bound holds across workers and crashes.
	Rate float64 `json:"rate,omitempty"`
	// PageSize is how many targets one step applies at most (default DefaultPageSize, at most
	// stead.MaxListLimit). With a rate, a page is about one second of it.
	PageSize int `json:"page_size,omitempty"`
}

// CommandID is the command id (or, for OpSend, the event id) every target of job jobID applies.
// An execution applies a command id once, so a page that a crash made the job apply again
// changes nothing the second time; a child that its parent's cascade reached first counts as
// done.
func CommandID(jobID string) string { return "bulk:" + jobID }

// check refuses a spec that cannot run, with an error wrapping stead.ErrInvalid.
func (s *Spec) check() error {
	if s.ID != "" {
		if err := check.TextMax("job id", s.ID, MaxJobIDLen); err != nil {
			return err
		}
	}
	known := false
	for _, op := range Ops() {
		known = known || s.Op == op
	}
	if !known {
		return check.Invalidf("bulk: unknown operation %q", s.Op)
	}
	f := s.Filter
	if f.Limit != 0 || f.Cursor != "" {
		return check.Invalidf("bulk: a job pages itself: the filter's limit and cursor must be zero")
	}
	if f.DefinitionID == DefinitionID {
		return check.Invalidf("bulk: a job does not act on bulk jobs (definition %q)", DefinitionID)
	}
	if f.DefinitionID == "" && len(f.Statuses) == 0 && f.IDPrefix == "" &&
		f.Created.IsZero() && f.Updated.IsZero() && f.Finished.IsZero() && !filterHasMore(f) {
		return check.Invalidf("bulk: a job's filter needs a criterion (a definition, statuses, an id prefix or a time window)")
	}
	if s.State != "" && s.Op != OpSetState {
		return check.Invalidf("bulk: %s takes no state", s.Op)
	}
	if s.Op == OpSetState {
		if err := check.ID("set-state state", s.State); err != nil {
			return err
		}
	}
	if len(s.Context) > 0 && s.Op != OpReset {
		return check.Invalidf("bulk: %s takes no context", s.Op)
	}
	if err := check.JSONObject("reset context", s.Context); err != nil {
		return err
	}
	if (s.EventKind != "" || len(s.EventData) > 0) && s.Op != OpSend {
		return check.Invalidf("bulk: %s sends no event", s.Op)
	}
	if s.Op == OpSend {
		if err := check.ID("event kind", s.EventKind); err != nil {
			return err
		}
		if s.EventKind == chart.KindStart || chart.IsControl(s.EventKind) {
			return check.Invalidf("bulk: send %s: use the operation of that command instead", s.EventKind)
		}
		if chart.IsReserved(s.EventKind) {
			return check.Invalidf("bulk: send %s: the engine's own kind, which no definition takes from outside", s.EventKind)
		}
		ev := stead.Event{ID: CommandID("x"), Kind: s.EventKind, Data: s.EventData}
		if err := ev.Validate(); err != nil {
			return err
		}
	}
	if math.IsNaN(s.Rate) || s.Rate < 0 || s.Rate > MaxRate {
		return check.Invalidf("bulk: rate %v: want 0 (no bound) to %v targets a second", s.Rate, MaxRate)
	}
	if s.PageSize < 0 || s.PageSize > stead.MaxListLimit {
		return check.Invalidf("bulk: page size %d: want 0 (default %d) to %d", s.PageSize, DefaultPageSize, stead.MaxListLimit)
	}
	return nil
}

// filterHasMore reports whether f selects by something besides the fields check names, such as
// criteria added to stead.ListFilter later: any field set beyond those counts as a criterion.
func filterHasMore(f stead.ListFilter) bool {
	f.DefinitionID, f.Statuses, f.IDPrefix, f.RootsOnly = "", nil, "", false
	f.Created, f.Updated, f.Finished = stead.TimeRange{}, stead.TimeRange{}, stead.TimeRange{}
	raw, err := json.Marshal(f)
	if err != nil {
		return false
	}
	empty, _ := json.Marshal(stead.ListFilter{})
	return string(raw) != string(empty)
}

// pageSize is how many targets one step lists: PageSize, or about a second of Rate.
func (s *Spec) pageSize() int {
	n := s.PageSize
	if n == 0 {
		n = DefaultPageSize
	}
	if s.Rate > 0 {
		n = min(n, max(1, int(math.Round(s.Rate))))
	}
	return n
}

// command is the control command a control op applies to each target of job id.
func (s *Spec) command(id string) worker.Command {
	return worker.Command{Op: worker.Op(s.Op), ID: CommandID(id), State: s.State, Context: s.Context}
}

// Progress is how far a job has got.
type Progress struct {
	// Total is how many executions the filter matched when the job started (its dry-run count).
	Total int64 `json:"total"`
	// Done counts the targets the operation applied to.
	Done int64 `json:"done"`
	// Repeats counts, among Done, the targets that had applied the job's command id already: a
	// page applied again after a lost commit (a crash, a pause that met a step in flight), or a
	// child its parent's cascade reached first. Control commands only: a send or a purge does
	// not know.
	Repeats int64 `json:"repeats,omitempty"`
	// Refused counts the targets whose status or data refused it (or that were gone).
	Refused int64 `json:"refused"`
	// Remaining is Total less what was done or refused, at least 0, and 0 once the job is over:
	// an estimate, since executions that start or stop matching the filter meanwhile change it.
	Remaining int64 `json:"remaining"`
	// Pages counts the steps that applied a page.
	Pages int64 `json:"pages"`
	// Reasons counts the refusals by reason.
	Reasons map[string]int64 `json:"reasons,omitempty"`
	// Refusals are the first MaxRefusals refused targets, with their reason.
	Refusals []Refusal `json:"refusals,omitempty"`
}

// Refusal is one target the job did not change, and why.
type Refusal struct {
	ExecutionID string `json:"id"`
	Reason      string `json:"reason"`
}

// remaining is Total less what was done or refused, at least 0.
func (p *Progress) remaining() int64 { return max(0, p.Total-p.Done-p.Refused) }

// refuse counts a refused target.
func (p *Progress) refuse(id, reason string) {
	p.Refused++
	if p.Reasons == nil {
		p.Reasons = map[string]int64{}
	}
	if _, ok := p.Reasons[reason]; !ok && len(p.Reasons) >= maxReasons {
		reason = "other"
	}
	p.Reasons[reason]++
	if len(p.Refusals) < MaxRefusals {
		p.Refusals = append(p.Refusals, Refusal{ExecutionID: id, Reason: reason})
	}
}

// state is a job's execution context: what it does, where its listing is, and how far it got.
type state struct {
	Spec Spec `json:"spec"`
	// Next holds the targets the next step applies, listed by the step before. Listing a page
	// one step ahead of applying it is what makes a re-run step exact: it applies the same ids
	// again (each a repeat), where a fresh listing would miss the targets that the lost run moved
	// out of the filter.
	Next []string `json:"next,omitempty"`
	// Cursor is the listing's cursor after Next; empty before the first page.
	Cursor string `json:"cursor,omitempty"`
	// Listed is set once the listing has no page after Next.
	Listed bool `json:"listed,omitempty"`
	// Wake is the id of the event that applies Next: a page event the last step emitted, or the
	// timeout of the timer it armed. Any other event applies nothing.
	Wake     string   `json:"wake,omitempty"`
	Progress Progress `json:"progress"`
}

func decodeState(raw []byte) (state, error) {
	var st state
	if len(raw) == 0 {
		return st, check.Invalidf("bulk: a job needs a context holding its spec")
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return st, check.Invalidf("bulk: job context: %v", err)
	}
	return st, nil
}

// Job is a bulk job as a listing or a status shows it.
type Job struct {
	ID string `json:"id"`
	// Status is the job execution's: pending until a worker starts it, running, suspended while
	// paused, cancelling and cancelled, done once every page is applied.
	Status stead.Status `json:"status"`
	// Outcome of a done job: "success", or "refused" when some targets were refused.
	Outcome  string   `json:"outcome,omitempty"`
	Spec     Spec     `json:"spec"`
	Progress Progress `json:"progress"`
	// CreatedAt, UpdatedAt and FinishedAt are the job execution's.
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
}

// Outcomes of a done job.
const (
	OutcomeSuccess = "success"
	OutcomeRefused = "refused"
)

// jobOf reads the job an execution of DefinitionID holds.
func jobOf(exe *stead.Execution) (Job, error) {
	if exe.DefinitionID != DefinitionID {
		return Job{}, fmt.Errorf("bulk: %q is an execution of %q, not a bulk job: %w", exe.ID, exe.DefinitionID, stead.ErrNotFound)
	}
	st, err := decodeState(exe.Context)
	if err != nil {
		return Job{}, err
	}
	j := Job{ID: exe.ID, Status: exe.Status, Outcome: exe.Outcome, Spec: st.Spec, Progress: st.Progress,
		CreatedAt: exe.CreatedAt, UpdatedAt: exe.UpdatedAt, FinishedAt: exe.FinishedAt}
	j.Spec.ID = exe.ID
	p := &j.Progress
	p.Remaining = 0
	if !exe.Status.Finished() && exe.Status != stead.StatusCancelling {
		p.Remaining = p.remaining()
	}
	return j, nil
}
