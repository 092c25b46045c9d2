package bundle

import (
	"errors"
	"slices"
	"testing"

	"github.com/steadhq/stead/turn"
)

// recordAll returns steps that record the name of every item and stage they see, failing at the
// item named failAt.
func recordAll(seen *[]string, failAt string) Steps {
	visit := func(it Item) error {
		*seen = append(*seen, it.String())
		if it.String() == failAt {
			return errors.New("refused")
		}
		return nil
	}
	return Steps{
		Complete:   func(it Item, _ turn.JournalCompletion) error { return visit(it) },
		Append:     func(it Item, _ turn.EventBatch) error { return visit(it) },
		Finish:     func(it Item, _ turn.InteractionFinish) error { return visit(it) },
		Invalidate: func(it Item, _ turn.CaseInvalidation) error { return visit(it) },
		Insert:     func(it Item, _ turn.InteractionInsert) error { return visit(it) },
		Enqueue:    func(it Item, _ turn.OutboxEntry) error { return visit(it) },
		Replay:     func(it Item, _ turn.ReplayRecord) error { return visit(it) },
		Phase:      func(it Item, _ turn.PhaseUpdate) error { return visit(it) },
		StageDone: func(st Stage) error {
			*seen = append(*seen, "done "+Item{Stage: st}.String())
			return nil
		},
	}
}

func TestWalkKeepsTheContractsOrder(t *testing.T) {
	full := turn.Bundle{
		JournalCompletions:       make([]turn.JournalCompletion, 2),
		Events:                   make([]turn.EventBatch, 1),
		InteractionFinishes:      make([]turn.InteractionFinish, 1),
		InteractionInvalidations: make([]turn.CaseInvalidation, 1),
		InteractionInserts:       make([]turn.InteractionInsert, 2),
		OutboxEntries:            make([]turn.OutboxEntry, 1),
		ReplayRecord:             &turn.ReplayRecord{},
		TurnPhase:                &turn.PhaseUpdate{},
	}
	every := []string{
		"bundle journal completion 0", "bundle journal completion 1", "done bundle journal completion 0",
		"bundle event batch 0", "done bundle event batch 0",
		"bundle interaction finish 0", "done bundle interaction finish 0",
		"bundle invalidation 0", "done bundle invalidation 0",
		"bundle interaction insert 0", "bundle interaction insert 1", "done bundle interaction insert 0",
		"bundle outbox entry 0", "done bundle outbox entry 0",
		"bundle replay record", "done bundle replay record",
		"bundle turn phase", "done bundle turn phase",
	}
	for _, tc := range []struct {
		name   string
		b      turn.Bundle
		failAt string
		want   []string
	}{
		{"every kind of item, stage by stage", full, "", every},
		{"an empty bundle still ends every stage", turn.Bundle{}, "", []string{
			"done bundle journal completion 0", "done bundle event batch 0", "done bundle interaction finish 0",
			"done bundle invalidation 0", "done bundle interaction insert 0", "done bundle outbox entry 0",
			"done bundle replay record", "done bundle turn phase",
		}},
		{"the first refusal stops the walk", full, "bundle interaction insert 0", every[:10]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen []string
			err := Walk(&tc.b, recordAll(&seen, tc.failAt))
			if (err != nil) != (tc.failAt != "") {
				t.Fatalf("Walk = %v", err)
			}
			if !slices.Equal(seen, tc.want) {
				t.Fatalf("walked\n%q\nwant\n%q", seen, tc.want)
			}
		})
	}
}

func TestItemWrap(t *testing.T) {
	base := errors.New("refused")
	err := Item{Stage: Events, Index: 3}.Wrap(base)
	if !errors.Is(err, base) || err.Error() != "bundle event batch 3: refused" {
		t.Fatalf("Wrap = %v", err)
	}
	if (Item{Stage: TurnPhase}).Wrap(nil) != nil {
		t.Fatal("Wrap(nil) is not nil")
	}
}
