package bulk

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/internal/check"
	"github.com/steadhq/stead/worker"
)

// Estimate is a dry run's count of what a job would select.
type Estimate struct {
	// Matched is how many executions the filter selects now (bulk jobs left out).
	Matched int64
	// ByStatus counts them by status.
	ByStatus map[stead.Status]int64
	// Eligible is how many of them have a status the operation takes; the others would be
	// refused. Set-state's state, retry's dead letter and a purge's whole tree are checked only
	// when the job applies them.
	Eligible int64
}

// DryRun checks spec as Start does and counts what its filter selects, by status, writing
// nothing.
func DryRun(ctx context.Context, s *stead.Store, spec Spec) (Estimate, error) {
	if err := spec.check(); err != nil {
		return Estimate{}, err
	}
	c, err := s.Count(ctx, spec.Filter)
	if err != nil {
		return Estimate{}, fmt.Errorf("bulk: count the targets: %w", err)
	}
	est := Estimate{ByStatus: map[stead.Status]int64{}}
	jobs := c.ByDefinition[DefinitionID] // bulk jobs are never targets
	for st, n := range c.ByStatus {
		est.ByStatus[st] = n
	}
	if jobs > 0 {
		// Only a filter that lets jobs in counts them: take them out by status.
		jc, err := s.Count(ctx, withDefinition(spec.Filter, DefinitionID))
		if err != nil {
			return Estimate{}, fmt.Errorf("bulk: count the targets: %w", err)
		}
		for st, n := range jc.ByStatus {
			if est.ByStatus[st] -= n; est.ByStatus[st] <= 0 {
				delete(est.ByStatus, st)
			}
		}
	}
	for st, n := range est.ByStatus {
		est.Matched += n
		if takes(spec.Op, st) {
			est.Eligible += n
		}
	}
	return est, nil
}

func withDefinition(f stead.ListFilter, def string) stead.ListFilter {
	f.DefinitionID = def
	return f
}

// takes reports whether an execution of status st takes op.
func takes(op Op, st stead.Status) bool {
	switch op {
	case OpSend:
		return !st.Finished() && st != stead.StatusCancelling
	case OpPurge:
		return st == stead.StatusDone || st == stead.StatusCancelled
	}
	return worker.CheckCommand(&stead.Execution{Status: st}, worker.Op(op)) == nil
}

// Start checks spec, counts its targets (the job's Total) and creates the job as an execution of
// DefinitionID, which a worker whose machines hold the bulk Machine (Register) runs. c.Known, when
// set, must hold it too. A spec that cannot run is ErrInvalid and nothing is written; a taken id
// is ErrAlreadyExists. Start returns once the job is stored: follow it with Get.
func Start(ctx context.Context, c *worker.Client, spec Spec) (Job, error) {
	if c.Known != nil && c.Known[DefinitionID] == nil {
		return Job{}, check.Invalidf("bulk: the client's Known has no bulk machine: add it with bulk.Register")
	}
	est, err := DryRun(ctx, c.Store, spec)
	if err != nil {
		return Job{}, err
	}
	if spec.ID == "" {
		spec.ID = "bulk-" + worker.NewEventID()[3:]
	}
	st := state{Spec: spec, Progress: Progress{Total: est.Matched, Remaining: est.Matched}}
	raw, err := json.Marshal(st)
	if err != nil {
		return Job{}, check.Invalidf("bulk: encode the job: %v", err)
	}
	exe, err := c.Create(ctx, DefinitionID, spec.ID, raw)
	if exe == nil {
		return Job{}, fmt.Errorf("bulk: start job %q: %w", spec.ID, err)
	}
	j, jerr := jobOf(exe)
	if jerr != nil {
		return Job{}, jerr
	}
	if err != nil {
		// Stored, its start left to a worker's relay (worker.ErrStartDeferred).
		return j, fmt.Errorf("bulk: start job %q: %w", spec.ID, err)
	}
	return j, nil
}

// Get returns the job id: its status and progress. An id that names no job is ErrNotFound.
func Get(ctx context.Context, s *stead.Store, id string) (Job, error) {
	exe, err := s.Load(ctx, id)
	if err != nil {
		return Job{}, fmt.Errorf("bulk: job %q: %w", id, err)
	}
	return jobOf(exe)
}

// List returns the jobs with one of statuses (all when empty), a page of at most limit (0: the
// store's default) in id order, and the cursor of the next page ("" after the last).
func List(ctx context.Context, s *stead.Store, statuses []stead.Status, limit int, cursor string) ([]Job, string, error) {
	pg, err := s.List(ctx, stead.ListFilter{DefinitionID: DefinitionID, Statuses: statuses, Limit: limit, Cursor: cursor})
	if err != nil {
		return nil, "", fmt.Errorf("bulk: list jobs: %w", err)
	}
	jobs := make([]Job, 0, len(pg.Items))
	for _, it := range pg.Items {
		j, err := Get(ctx, s, it.ID)
		if err != nil {
			continue // purged meanwhile
		}
		jobs = append(jobs, j)
	}
	return jobs, pg.NextCursor, nil
}

// Pause suspends the job id: the step in flight, if any, finishes, and no further page is
// applied until Resume (a page in flight when the pause commits loses its own commit and is
// applied again on resume, each of its targets a repeat that counts once); a rate limit's timer
// fires into the parked queue meanwhile. A job that no
// worker has started yet (pending) is refused, like any execution's suspend: cancel it instead,
// or pause it once it runs.
func Pause(ctx context.Context, c *worker.Client, id string) (Job, error) {
	return command(ctx, c, id, worker.OpSuspend)
}

// Resume runs a paused job again from where it stopped.
func Resume(ctx context.Context, c *worker.Client, id string) (Job, error) {
	return command(ctx, c, id, worker.OpResume)
}

// Cancel ends the job id: no page is applied after the one in flight. What it applied stays
// applied; a page in flight when the cancel commits loses its own commit, so what it applied is
// not in the job's counts.
func Cancel(ctx context.Context, c *worker.Client, id string) (Job, error) {
	return command(ctx, c, id, worker.OpCancel)
}

func command(ctx context.Context, c *worker.Client, id string, op worker.Op) (Job, error) {
	if _, err := Get(ctx, c.Store, id); err != nil {
		return Job{}, err
	}
	if _, err := c.Control(ctx, id, worker.Command{Op: op}); err != nil {
		return Job{}, fmt.Errorf("bulk: %s job %q: %w", op, id, err)
	}
	return Get(ctx, c.Store, id)
}

// ReasonsByCount returns the refusal reasons of p, most frequent first.
func (p Progress) ReasonsByCount() []string {
	keys := slices.Collect(maps.Keys(p.Reasons))
	slices.SortFunc(keys, func(a, b string) int {
		if d := p.Reasons[b] - p.Reasons[a]; d != 0 {
			if d > 0 {
				return 1
			}
			return -1
		}
		if a < b {
			return -1
		}
		return 1
	})
	return keys
}
