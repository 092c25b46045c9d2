package memturn

import (
	"fmt"
	"sync"
)

// Point names a place where the store can be told to fail, so that tests can prove what a crash
// or an outage at that instant leaves behind.
type Point string

// The fault points. Outside a bundle, an "after" point fails the call with the preceding write
// left in place (a crash after the write); a "before" point fails it with nothing written.
// Inside a bundle (Commit), the points marked "in a bundle" fire after the stated stage, and the
// whole bundle rolls back.
const (
	// AfterInteractionPersistence fires after InsertInteraction or InsertReplacingBlocking
	// (the card stays); in a bundle, after stage 5 (inserts).
	AfterInteractionPersistence Point = "after_interaction_persistence"
	// BeforeJournalInsert fires in BeginCommand before anything is written.
	BeforeJournalInsert Point = "before_journal_insert"
	// AfterJournalInsertBeforeCommit fires in BeginCommand after a fresh insert (the entry
	// survives as pending); in a bundle, after stage 1 (journal completions).
	AfterJournalInsertBeforeCommit Point = "after_journal_insert_before_commit"
	// AfterCommitBeforeEventReadback fires in AppendEvents after the append (the events stay);
	// in a bundle, after stage 2 (events).
	AfterCommitBeforeEventReadback Point = "after_commit_before_event_readback"
	// BeforeOutboxDispatch fires in ClaimDue before claiming.
	BeforeOutboxDispatch Point = "before_outbox_dispatch"
	// AfterOutboxDispatch fires in MarkCompleted, MarkFailed and MarkOutcomeUnknown before the
	// write: the row stays dispatching with its claim, as after a dispatcher crash.
	AfterOutboxDispatch Point = "after_outbox_dispatch"
	// BeforeResponsePersistence fires in AppendAssistantTurn before the write.
	BeforeResponsePersistence Point = "before_response_persistence"
)

// BundleSteps is the number of stages of a bundle (see turn.Bundle).
const BundleSteps = 8

// AfterBundleStep is the point that fires inside Commit once stage step (1 to BundleSteps) of the
// bundle has been applied; the bundle then rolls back.
func AfterBundleStep(step int) Point { return Point(fmt.Sprintf("after_bundle_step_%d", step)) }

// faults holds the armed failures, first in first out per point. It has its own lock so a
// test can arm a failure while a call is running.
type faults struct {
	mu    sync.Mutex
	armed map[Point][]error
}

func (f *faults) arm(p Point, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.armed == nil {
		f.armed = map[Point][]error{}
	}
	f.armed[p] = append(f.armed[p], err)
}

// take returns the next failure armed at p, or nil.
func (f *faults) take(p Point) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.armed[p]
	if len(q) == 0 {
		return nil
	}
	err := q[0]
	if len(q) == 1 {
		delete(f.armed, p)
	} else {
		f.armed[p] = q[1:]
	}
	return err
}

func (f *faults) count() map[Point]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[Point]int, len(f.armed))
	for p, q := range f.armed {
		out[p] = len(q)
	}
	return out
}

func (f *faults) clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.armed = nil
}

// FailNext arms err to be returned the next time the store reaches p. Failures armed at the same
// point fire in the order they were armed, one per passage.
func (s *Backend) FailNext(p Point, err error) { s.faults.arm(p, err) }

// ArmedFailures returns how many failures are armed at each point.
func (s *Backend) ArmedFailures() map[Point]int { return s.faults.count() }

// ClearFailures disarms every failure.
func (s *Backend) ClearFailures() { s.faults.clear() }
