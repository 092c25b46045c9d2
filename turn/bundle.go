package turn

import "time"

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

// Validate checks the bundle for account, as PrepareCommit does, and reports the first
// refusal.
func (b *Bundle) Validate(account string) error {
	_, err := PrepareCommit(account, *b)
	return err
}

// PrepareCommit checks the bundle for account and returns the copy a backend applies: every
// time in UTC at microsecond precision, empty documents nil, the caller's bundle untouched. The
// checked Stores run it before Commit reaches the backend, and every path that applies a bundle
// outside them (pgturn's CommitIn, inside the application's transaction) must run it too, so
// that no bundle reaches storage unchecked.
//
// The refusals come in this order: each event batch must belong to account
// (CodeBundleAccountMismatch) and be non-empty (CodeInvalidRecord), then each inserted
// interaction and the replay record must belong to account, then every item must be
// well-formed input (ErrInvalid; an insert must be a new active card and an outbox entry a new
// pending row, else CodeInvalidRecord). Rules that depend on stored state (transitions,
// uniqueness, existence) are the backend's, checked while applying.
func PrepareCommit(account string, b Bundle) (Bundle, error) {
	if err := ValidateAccount(account); err != nil {
		return Bundle{}, err
	}
	for i, batch := range b.Events {
		if batch.AccountID != account {
			return Bundle{}, BundleAccountMismatch("event batch %d belongs to another account", i)
		}
		if len(batch.Events) == 0 {
			return Bundle{}, InvalidRecord("event batch %d is empty", i)
		}
	}
	for i, ins := range b.InteractionInserts {
		if ins.Interaction.AccountID != account {
			return Bundle{}, BundleAccountMismatch("interaction insert %d (%s) belongs to another account", i, ins.Interaction.ID)
		}
	}
	if b.ReplayRecord != nil && b.ReplayRecord.AccountID != account {
		return Bundle{}, BundleAccountMismatch("replay record of turn %s belongs to another account", b.ReplayRecord.TurnID)
	}
	var out Bundle
	var err error
	if out.JournalCompletions, err = prepareAll(b.JournalCompletions, JournalCompletion.prepare); err != nil {
		return Bundle{}, err
	}
	if out.Events, err = prepareAll(b.Events, EventBatch.prepare); err != nil {
		return Bundle{}, err
	}
	if out.InteractionFinishes, err = prepareAll(b.InteractionFinishes, InteractionFinish.prepare); err != nil {
		return Bundle{}, err
	}
	if out.InteractionInvalidations, err = prepareAll(b.InteractionInvalidations, CaseInvalidation.prepare); err != nil {
		return Bundle{}, err
	}
	if out.InteractionInserts, err = prepareAll(b.InteractionInserts, InteractionInsert.prepare); err != nil {
		return Bundle{}, err
	}
	if out.OutboxEntries, err = prepareAll(b.OutboxEntries, OutboxEntry.prepareEnqueue); err != nil {
		return Bundle{}, err
	}
	if b.ReplayRecord != nil {
		r, err := b.ReplayRecord.prepare()
		if err != nil {
			return Bundle{}, err
		}
		out.ReplayRecord = &r
	}
	if b.TurnPhase != nil {
		if err := ValidateID("turn id", b.TurnPhase.TurnID); err != nil {
			return Bundle{}, err
		}
		if err := validPhase(b.TurnPhase.Phase); err != nil {
			return Bundle{}, err
		}
		p := *b.TurnPhase
		out.TurnPhase = &p
	}
	return out, nil
}

// prepareAll prepares every item into a new slice, nil when there are none.
func prepareAll[T any](xs []T, prepare func(T) (T, error)) ([]T, error) {
	if len(xs) == 0 {
		return nil, nil
	}
	out := make([]T, len(xs))
	for i, x := range xs {
		var err error
		if out[i], err = prepare(x); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (c JournalCompletion) prepare() (JournalCompletion, error) {
	if err := ValidateID("command id", c.CommandID); err != nil {
		return c, err
	}
	var err error
	c.Outcome, err = c.Outcome.prepare()
	return c, err
}

func (f InteractionFinish) prepare() (InteractionFinish, error) {
	if err := ValidateID("interaction id", f.InteractionID); err != nil {
		return f, err
	}
	return f, f.Outcome.Validate()
}

func (inv CaseInvalidation) prepare() (CaseInvalidation, error) {
	if err := inv.CaseKey.Validate(); err != nil {
		return inv, err
	}
	if err := ValidateRevision("new revision", inv.NewRevision); err != nil {
		return inv, err
	}
	return inv, inv.Reason.Validate()
}

func (ins InteractionInsert) prepare() (InteractionInsert, error) {
	var err error
	ins.Interaction, err = ins.Interaction.prepareInsert()
	return ins, err
}
