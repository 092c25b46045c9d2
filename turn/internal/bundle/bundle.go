// Package bundle holds, once for every turn backend, the fixed order in which a turn.Bundle is
// applied (see turn.Bundle): a backend gives Walk one function per kind of item, and Walk calls
// them stage by stage, item by item, naming each item for the backend's errors.
package bundle

import (
	"fmt"

	"github.com/steadhq/stead/turn"
)

// Stage is one kind of item of a bundle, numbered 1 to 8 in the order the stages are applied.
type Stage int

// The stages, in the order of turn.Bundle.
const (
	JournalCompletions Stage = iota + 1
	Events
	InteractionFinishes
	InteractionInvalidations
	InteractionInserts
	OutboxEntries
	ReplayRecord
	TurnPhase
)

// Item is one item of a bundle: its stage and its index within the stage (0 for the replay
// record and the turn phase, which are one item at most).
type Item struct {
	Stage Stage
	Index int
}

// String names the item as a backend's errors do: "bundle event batch 2", "bundle turn phase".
func (it Item) String() string {
	switch it.Stage {
	case JournalCompletions:
		return fmt.Sprintf("bundle journal completion %d", it.Index)
	case Events:
		return fmt.Sprintf("bundle event batch %d", it.Index)
	case InteractionFinishes:
		return fmt.Sprintf("bundle interaction finish %d", it.Index)
	case InteractionInvalidations:
		return fmt.Sprintf("bundle invalidation %d", it.Index)
	case InteractionInserts:
		return fmt.Sprintf("bundle interaction insert %d", it.Index)
	case OutboxEntries:
		return fmt.Sprintf("bundle outbox entry %d", it.Index)
	case ReplayRecord:
		return "bundle replay record"
	case TurnPhase:
		return "bundle turn phase"
	}
	return fmt.Sprintf("bundle stage %d item %d", it.Stage, it.Index)
}

// Wrap returns err prefixed with the item's name, or nil for a nil err.
func (it Item) Wrap(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", it, err)
}

// Steps are what a backend does with each kind of item; every function is required except
// StageDone.
type Steps struct {
	Complete   func(Item, turn.JournalCompletion) error
	Append     func(Item, turn.EventBatch) error
	Finish     func(Item, turn.InteractionFinish) error
	Invalidate func(Item, turn.CaseInvalidation) error
	Insert     func(Item, turn.InteractionInsert) error
	Enqueue    func(Item, turn.OutboxEntry) error
	Replay     func(Item, turn.ReplayRecord) error
	Phase      func(Item, turn.PhaseUpdate) error
	// StageDone, when set, runs after each stage, whether the stage held items or not.
	StageDone func(Stage) error
}

// Walk calls steps for every item of b in the contract's fixed order, and stops at the first
// error, which it returns as it is. The order, and why invalidations come before inserts, is
// turn.Bundle's.
func Walk(b *turn.Bundle, steps Steps) error {
	stages := []struct {
		stage Stage
		run   func(Stage) error
	}{
		{JournalCompletions, func(st Stage) error { return each(st, b.JournalCompletions, steps.Complete) }},
		{Events, func(st Stage) error { return each(st, b.Events, steps.Append) }},
		{InteractionFinishes, func(st Stage) error { return each(st, b.InteractionFinishes, steps.Finish) }},
		// Before the inserts: a retired card leaves the blocking slot before its replacement
		// takes it.
		{InteractionInvalidations, func(st Stage) error { return each(st, b.InteractionInvalidations, steps.Invalidate) }},
		{InteractionInserts, func(st Stage) error { return each(st, b.InteractionInserts, steps.Insert) }},
		{OutboxEntries, func(st Stage) error { return each(st, b.OutboxEntries, steps.Enqueue) }},
		{ReplayRecord, func(st Stage) error { return one(st, b.ReplayRecord, steps.Replay) }},
		{TurnPhase, func(st Stage) error { return one(st, b.TurnPhase, steps.Phase) }},
	}
	for _, s := range stages {
		if err := s.run(s.stage); err != nil {
			return err
		}
		if steps.StageDone != nil {
			if err := steps.StageDone(s.stage); err != nil {
				return err
			}
		}
	}
	return nil
}

func each[T any](stage Stage, items []T, f func(Item, T) error) error {
	for i, v := range items {
		if err := f(Item{Stage: stage, Index: i}, v); err != nil {
			return err
		}
	}
	return nil
}

func one[T any](stage Stage, item *T, f func(Item, T) error) error {
	if item == nil {
		return nil
	}
	return f(Item{Stage: stage}, *item)
}
