package turn

import (
	"time"

	"github.com/steadhq/stead/internal/check"
)

// Bundle is everything one turn step commits, applied all-or-nothing by CommitStore.Commit in
// this fixed order (every backend alike), each item by the same rule as its standalone method:
//
//  1. JournalCompletions (CompleteCommand);
//  2. Events (AppendEvents), extending Receipt.EventIDs;
//  3. InteractionFinishes (FinishResolution);
//  4. InteractionInvalidations (InvalidateForCase), extending Receipt.InvalidatedInteractions.
//     They run before the inserts so a retired card leaves the blocking slot before its
//     replacement takes it;
//  5. InteractionInserts (InsertInteraction, or InsertReplacingBlocking when ReplaceBlocking),
//     adding each id to Receipt.InsertedInteractions and each superseded occupant to
//     Receipt.InvalidatedInteractions;
//  6. OutboxEntries (Enqueue);
//  7. ReplayRecord (PutReplay);
//  8. TurnPhase (SetTurnPhase).
//
// Every store-stamped time of the bundle is the one instant returned as Receipt.CommittedAt.
// Journal completions, finishes, invalidations and the turn phase carry no account of their own:
// they apply to the account given to Commit. Event batches, inserted interactions and the replay
// record carry one, and it must be that account (CodeBundleAccountMismatch).
type Bundle struct {
	JournalCompletions       []JournalCompletion
	Events                   []EventBatch
	InteractionFinishes      []InteractionFinish
	InteractionInvalidations []CaseInvalidation
	InteractionInserts       []InteractionInsert
	OutboxEntries            []OutboxEntry
	ReplayRecord             *ReplayRecord
	TurnPhase                *PhaseUpdate
}

// JournalCompletion completes a journal entry with an outcome.
type JournalCompletion struct {
	CommandID ID
	Outcome   JournalOutcome
}

// InteractionFinish settles a resolving card.
type InteractionFinish struct {
	InteractionID ID
	Outcome       ResolutionOutcome
}

// CaseInvalidation runs the revision sweep on a case.
type CaseInvalidation struct {
	CaseKey     CaseKey
	NewRevision Revision
	Reason      InvalidationReason
}

// InteractionInsert inserts a card, replacing an active blocking occupant when ReplaceBlocking.
type InteractionInsert struct {
	Interaction     Interaction
	ReplaceBlocking bool
}

// PhaseUpdate sets a turn's phase.
type PhaseUpdate struct {
	TurnID ID
	Phase  Phase
}

// Receipt is what a committed bundle did.
type Receipt struct {
	// EventIDs are every event appended, in append order.
	EventIDs []ID `json:"event_ids,omitempty"`
	// InsertedInteractions are the inserted cards, in bundle order.
	InsertedInteractions []ID `json:"inserted_interactions,omitempty"`
	// InvalidatedInteractions are the cards retired by invalidations and by superseding inserts,
	// in application order.
	InvalidatedInteractions []ID `json:"invalidated_interactions,omitempty"`
	// CommittedAt is the store's clock when the bundle was applied.
	CommittedAt time.Time `json:"committed_at"`
}

// IsEmpty reports whether the bundle carries nothing.
func (b *Bundle) IsEmpty() bool {
	return len(b.JournalCompletions) == 0 && len(b.Events) == 0 && len(b.InteractionFinishes) == 0 &&
		len(b.InteractionInvalidations) == 0 && len(b.InteractionInserts) == 0 &&
		len(b.OutboxEntries) == 0 && b.ReplayRecord == nil && b.TurnPhase == nil
}

// Validate checks the bundle for account before anything is written; every CommitStore calls it
// first. In order: each event batch must belong to account (CodeBundleAccountMismatch) and be
// non-empty (CodeInvalidRecord), then each inserted interaction and the replay record must
// belong to account, then every item must be well-formed input (ErrInvalid). Rules that depend
// on stored state (transitions, uniqueness, existence) are checked while applying.
func (b *Bundle) Validate(account string) error {
	if err := ValidateAccount(account); err != nil {
		return err
	}
	for i, batch := range b.Events {
		if batch.AccountID != account {
			return BundleAccountMismatch("event batch %d belongs to another account", i)
		}
		if len(batch.Events) == 0 {
			return InvalidRecord("event batch %d is empty", i)
		}
	}
	for i, ins := range b.InteractionInserts {
		if ins.Interaction.AccountID != account {
			return BundleAccountMismatch("interaction insert %d (%s) belongs to another account", i, ins.Interaction.ID)
		}
	}
	if b.ReplayRecord != nil && b.ReplayRecord.AccountID != account {
		return BundleAccountMismatch("replay record of turn %s belongs to another account", b.ReplayRecord.TurnID)
	}
	for _, c := range b.JournalCompletions {
		if err := ValidateID("command id", c.CommandID); err != nil {
			return err
		}
		if err := c.Outcome.Validate(); err != nil {
			return err
		}
	}
	for _, batch := range b.Events {
		if err := batch.Validate(); err != nil {
			return err
		}
	}
	for _, f := range b.InteractionFinishes {
		if err := ValidateID("interaction id", f.InteractionID); err != nil {
			return err
		}
		if err := f.Outcome.Validate(); err != nil {
			return err
		}
	}
	for _, inv := range b.InteractionInvalidations {
		if err := inv.CaseKey.Validate(); err != nil {
			return err
		}
		if err := ValidateRevision("new revision", inv.NewRevision); err != nil {
			return err
		}
		if err := inv.Reason.Validate(); err != nil {
			return err
		}
	}
	for _, ins := range b.InteractionInserts {
		if err := ins.Interaction.Validate(); err != nil {
			return err
		}
	}
	for _, e := range b.OutboxEntries {
		if err := e.Validate(); err != nil {
			return err
		}
	}
	if b.ReplayRecord != nil {
		if err := b.ReplayRecord.Validate(); err != nil {
			return err
		}
	}
	if b.TurnPhase != nil {
		if err := ValidateID("turn id", b.TurnPhase.TurnID); err != nil {
			return err
		}
		if !b.TurnPhase.Phase.Valid() {
			return check.Invalidf("unknown turn phase %q", b.TurnPhase.Phase)
		}
	}
	return nil
}
