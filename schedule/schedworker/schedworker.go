// Package schedworker fires schedules through a worker.Client: it is the glue between package
// schedule, which keeps no dependency on the worker so that every backend can implement its
// storage, and the client that creates, starts and cancels executions.
package schedworker

import (
	"context"
	"errors"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/schedule"
	"github.com/steadhq/stead/worker"
)

// Starter is a schedule.BatchStarter on a worker.Client: a round's ticks are created in one
// store transaction and their starts published together.
type Starter struct{ *worker.Client }

var _ schedule.BatchStarter = Starter{}

// StartBatch creates the executions with CreateBatch. Those it created, and those whose id was
// taken, exist; so do those whose start it left to the relay. Any other error means none can be
// counted on (CreateBatch writes nothing when its transaction fails).
func (s Starter) StartBatch(ctx context.Context, starts []schedule.Start) ([]bool, error) {
	news := make([]worker.NewExecution, len(starts))
	for i, st := range starts {
		news[i] = worker.NewExecution{DefinitionID: st.DefinitionID, ID: st.ID, Context: st.Context}
	}
	exes, err := s.CreateBatch(ctx, news)
	if err != nil && len(exes) == 0 && !onlyTaken(err) {
		return nil, err
	}
	exist := make([]bool, len(starts))
	for i := range exist {
		exist[i] = true
	}
	return exist, nil
}

// onlyTaken reports whether err is one ErrAlreadyExists or a join of nothing else.
func onlyTaken(err error) bool {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if !onlyTaken(e) {
				return false
			}
		}
		return true
	}
	return errors.Is(err, stead.ErrAlreadyExists)
}

// Runner returns a Runner on schedules that starts executions through c, reads the status of the
// previous tick's execution from c's store and cancels it through c for CancelPrevious.
func Runner(schedules *schedule.Store, c *worker.Client) *schedule.Runner {
	return &schedule.Runner{Schedules: schedules, Starter: Starter{c}, Executions: c.Store, Logger: c.Logger,
		Cancel: func(ctx context.Context, id string) error {
			// The command id is the execution's: a cancel retried after a lost answer is one.
			_, err := c.Cancel(ctx, id, "schedule-cancel:"+id)
			return err
		}}
}
