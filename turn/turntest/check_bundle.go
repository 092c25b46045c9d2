package turntest

import (
	"github.com/steadhq/stead/turn"
)

// bundleSetup is the state checks 22 and 24 start from: a conversation and turn, a pending
// command, a resolving blocking card and a stale non-blocking card on case 1.
type bundleSetup struct {
	cmd      turn.ID
	answered turn.Interaction
	stale    turn.Interaction
}

func (c *C) setupBundle(key string) bundleSetup {
	s := c.s
	c.ok(s.Conversations.CreateConversation(c.ctx, c.conversation(c.a, c.conv)), "create conversation")
	c.ok(s.Conversations.AppendUserTurn(c.ctx, userTurn(c.a, c.conv, c.turnID, epoch)), "append user turn")
	b := bundleSetup{cmd: turn.NewID()}
	val(s.Journal.BeginCommand(c.ctx, c.journalEntry(c.a, c.turnID, b.cmd, key, epoch)))(c, "begin command")
	b.answered = c.card(c.a, caseRef(1), epoch)
	c.ok(s.Interactions.InsertInteraction(c.ctx, b.answered), "insert answered")
	val(s.Interactions.BeginResolution(c.ctx, c.a, b.answered.ID, turn.InteractionActive, "ack", c.turnID))(c, "begin answered")
	b.stale = c.card(c.a, caseRef(1), at(1), nonBlocking)
	c.ok(s.Interactions.InsertInteraction(c.ctx, b.stale), "insert stale")
	return b
}

// A bundle applies every item, in the fixed order, and its receipt says what it did.
func checkCommitBundleAppliesAll(c *C) {
	s := c.s
	setup := c.setupBundle("bundle")
	e := newIDs(2)
	next := c.card(c.a, caseRef(2), at(2))
	outbox := c.outboxEntry(turn.NewID(), setup.cmd, "bundle", at(2))
	replay := turn.ReceivedReplay(c.turnID, c.conv, c.a, at(2))
	replay.Phase = turn.PhaseCommitted
	replay.EventIDs = e
	outcome := turn.Committed(2, e...)
	b := turn.Bundle{
		JournalCompletions:       []turn.JournalCompletion{{CommandID: setup.cmd, Outcome: outcome}},
		Events:                   []turn.EventBatch{eventBatch(c.a, setup.cmd, 2, e, at(2))},
		InteractionFinishes:      []turn.InteractionFinish{{InteractionID: setup.answered.ID, Outcome: turn.Resolved(e...)}},
		InteractionInvalidations: []turn.CaseInvalidation{{CaseKey: caseKey(), NewRevision: 2, Reason: turn.RevisionChanged()}},
		InteractionInserts:       []turn.InteractionInsert{{Interaction: next, ReplaceBlocking: true}},
		OutboxEntries:            []turn.OutboxEntry{outbox},
		ReplayRecord:             &replay,
		TurnPhase:                &turn.PhaseUpdate{TurnID: c.turnID, Phase: turn.PhaseCommitted},
	}
	receipt := val(s.Commits.Commit(c.ctx, c.a, b))(c, "commit")
	c.idsEq(receipt.EventIDs, e, "receipt event ids")
	c.idsEq(receipt.InsertedInteractions, []turn.ID{next.ID}, "receipt inserted interactions")
	c.that(contains(receipt.InvalidatedInteractions, setup.stale.ID), "the receipt does not name the stale card as invalidated")
	c.that(!contains(receipt.InvalidatedInteractions, setup.answered.ID), "the receipt names the resolving card as invalidated")
	c.that(!receipt.CommittedAt.IsZero(), "the receipt has no commit time")

	entry := val(s.Journal.LoadCommand(c.ctx, c.a, setup.cmd))(c, "load command")
	c.that(entry.Status == turn.JournalCommitted && entry.Result != nil, "the command is %s", entry.Status)
	c.same(*entry.Result, outcome, "the command's outcome")
	evs := val(s.Events.LoadEvents(c.ctx, c.a, e))(c, "load events")
	c.idsEq(eventIDs(evs), e, "the bundle's events")
	answered := c.loadCard(c.a, setup.answered.ID)
	c.that(answered.Interaction.Status == turn.InteractionResolved, "answered is %s", answered.Interaction.Status)
	c.idsEq(answered.ResolutionEventIDs, e, "answered's resolution events")
	stale := c.loadCard(c.a, setup.stale.ID)
	c.that(stale.Interaction.Status == turn.InteractionInvalidated && stale.Invalidation != nil &&
		stale.Invalidation.NewRevision != nil && *stale.Invalidation.NewRevision == 2, "stale is %s", stale.Interaction.Status)
	c.that(c.cardStatus(next.ID) == turn.InteractionActive, "next is not active")
	c.same(c.outboxRecord(outbox.OutboxID).Entry, outbox, "the bundle's outbox row")
	c.same(val(s.Replay.LoadReplay(c.ctx, c.a, c.turnID))(c, "load replay"), replay, "the bundle's replay record")
	c.that(val(s.Conversations.TurnPhase(c.ctx, c.a, c.turnID))(c, "phase").Phase == turn.PhaseCommitted, "the turn is not committed")
}

// A bundle whose last item fails leaves nothing behind.
func checkCommitBundleAtomicOnInvalidItem(c *C) {
	s := c.s
	e := newIDs(1)
	cmd := turn.NewID()
	card := c.card(c.a, caseRef(1), epoch)
	outbox := c.outboxEntry(turn.NewID(), cmd, "atomic", epoch)
	replay := turn.ReceivedReplay(c.turnID, c.conv, c.a, epoch)
	b := turn.Bundle{
		Events:             []turn.EventBatch{eventBatch(c.a, cmd, 1, e, epoch)},
		InteractionInserts: []turn.InteractionInsert{{Interaction: card}},
		OutboxEntries:      []turn.OutboxEntry{outbox},
		ReplayRecord:       &replay,
		TurnPhase:          &turn.PhaseUpdate{TurnID: c.turnID, Phase: turn.PhaseCommitted}, // never appended
	}
	_, err := s.Commits.Commit(c.ctx, c.a, b)
	c.errIs(err, turn.ErrNotFound, "commit naming a turn that was never appended")
	c.that(len(val(s.Events.LoadEvents(c.ctx, c.a, e))(c, "load events")) == 0, "the failed bundle's event is visible")
	c.that(val(s.Events.CountEvents(c.ctx, c.a, caseKey()))(c, "count") == 0, "the failed bundle's event is counted")
	page := val(s.Events.ReadFrom(c.ctx, c.a, turn.Start, 10))(c, "read the stream")
	c.that(len(page.Events) == 0, "the failed bundle's event is in the stream")
	_, err = s.Interactions.LoadInteraction(c.ctx, c.a, card.ID)
	c.errIs(err, turn.ErrNotFound, "the failed bundle's card")
	_, err = s.Outbox.LoadOutbox(c.ctx, outbox.OutboxID)
	c.errIs(err, turn.ErrNotFound, "the failed bundle's outbox row")
	_, err = s.Replay.LoadReplay(c.ctx, c.a, c.turnID)
	c.errIs(err, turn.ErrNotFound, "the failed bundle's replay record")

	b.ReplayRecord, b.TurnPhase = nil, nil
	receipt := val(s.Commits.Commit(c.ctx, c.a, b))(c, "commit without the failing items")
	c.idsEq(receipt.EventIDs, e, "receipt event ids")
	c.that(val(s.Events.CountEvents(c.ctx, c.a, caseKey()))(c, "count") == 1, "the bundle's event is not visible")
	c.that(c.cardStatus(card.ID) == turn.InteractionActive, "the bundle's card is not active")
}

// A failed bundle restores the records it modified, not only those it created.
func checkCommitBundleRestoresModifiedRecords(c *C) {
	s := c.s
	setup := c.setupBundle("restore")
	occupant := c.card(c.a, otherCase(1), at(1))
	c.ok(s.Interactions.InsertInteraction(c.ctx, occupant), "insert occupant")
	original := turn.ReceivedReplay(c.turnID, c.conv, c.a, epoch)
	c.ok(s.Replay.PutReplay(c.ctx, original), "put the original replay record")
	beforeAnswered := c.loadCard(c.a, setup.answered.ID)
	beforeStale := c.loadCard(c.a, setup.stale.ID)
	beforeOccupant := c.loadCard(c.a, occupant.ID)
	beforeEntry := val(s.Journal.LoadCommand(c.ctx, c.a, setup.cmd))(c, "load command")
	beforeMarker := val(s.Conversations.TurnPhase(c.ctx, c.a, c.turnID))(c, "phase")

	e := newIDs(1)
	replacement := c.card(c.a, otherCase(2), at(2))
	outbox := c.outboxEntry(turn.NewID(), setup.cmd, "restore", at(2))
	replay := original
	replay.Phase = turn.PhaseCommitted
	replay.EventIDs = e
	b := turn.Bundle{
		JournalCompletions:       []turn.JournalCompletion{{CommandID: setup.cmd, Outcome: turn.Committed(2, e...)}},
		Events:                   []turn.EventBatch{eventBatch(c.a, setup.cmd, 2, e, at(2))},
		InteractionFinishes:      []turn.InteractionFinish{{InteractionID: setup.answered.ID, Outcome: turn.Resolved(e...)}},
		InteractionInvalidations: []turn.CaseInvalidation{{CaseKey: caseKey(), NewRevision: 2, Reason: turn.RevisionChanged()}},
		InteractionInserts:       []turn.InteractionInsert{{Interaction: replacement, ReplaceBlocking: true}},
		OutboxEntries:            []turn.OutboxEntry{outbox},
		ReplayRecord:             &replay,
		TurnPhase:                &turn.PhaseUpdate{TurnID: turn.NewID(), Phase: turn.PhaseCommitted}, // never appended
	}
	_, err := s.Commits.Commit(c.ctx, c.a, b)
	c.errIs(err, turn.ErrNotFound, "commit naming a turn that was never appended")

	entry := val(s.Journal.LoadCommand(c.ctx, c.a, setup.cmd))(c, "load command")
	c.that(entry.Status == turn.JournalPending && entry.Result == nil && entry.CompletedAt.IsZero(), "the command is %s after the failed bundle", entry.Status)
	c.same(entry, beforeEntry, "the command after the failed bundle")
	c.that(val(s.Events.CountEvents(c.ctx, c.a, caseKey()))(c, "count") == 0, "the failed bundle's event is counted")
	answered := c.loadCard(c.a, setup.answered.ID)
	c.that(answered.Interaction.Status == turn.InteractionResolving && len(answered.ResolutionEventIDs) == 0, "answered is %s", answered.Interaction.Status)
	c.same(answered, beforeAnswered, "answered after the failed bundle")
	stale := c.loadCard(c.a, setup.stale.ID)
	c.that(stale.Interaction.Status == turn.InteractionActive && stale.Invalidation == nil, "stale is %s", stale.Interaction.Status)
	c.same(stale, beforeStale, "stale after the failed bundle")
	c.same(c.loadCard(c.a, occupant.ID), beforeOccupant, "the occupant after the failed bundle")
	_, err = s.Interactions.LoadInteraction(c.ctx, c.a, replacement.ID)
	c.errIs(err, turn.ErrNotFound, "the failed bundle's replacement")
	_, err = s.Outbox.LoadOutbox(c.ctx, outbox.OutboxID)
	c.errIs(err, turn.ErrNotFound, "the failed bundle's outbox row")
	c.same(val(s.Replay.LoadReplay(c.ctx, c.a, c.turnID))(c, "load replay"), original, "the replay record after the failed bundle")
	c.same(val(s.Conversations.TurnPhase(c.ctx, c.a, c.turnID))(c, "phase"), beforeMarker, "the turn phase after the failed bundle")

	b.TurnPhase = &turn.PhaseUpdate{TurnID: c.turnID, Phase: turn.PhaseCommitted}
	b.OutboxEntries = nil
	receipt := val(s.Commits.Commit(c.ctx, c.a, b))(c, "commit naming the turn")
	c.idsEq(receipt.EventIDs, e, "receipt event ids")
	c.that(contains(receipt.InvalidatedInteractions, occupant.ID), "the receipt does not name the superseded occupant")
	c.that(contains(receipt.InvalidatedInteractions, setup.stale.ID), "the receipt does not name the stale card")
	c.that(val(s.Journal.LoadCommand(c.ctx, c.a, setup.cmd))(c, "load command").Status == turn.JournalCommitted, "the command is not committed")
}

// A bundle refuses items of another account, and an empty event batch, writing nothing.
func checkCommitBundleRejectsForeignAccountItems(c *C) {
	s := c.s
	e := newIDs(1)
	_, err := s.Commits.Commit(c.ctx, c.a, turn.Bundle{Events: []turn.EventBatch{eventBatch(c.b, turn.NewID(), 1, e, epoch)}})
	c.errCode(err, turn.CodeBundleAccountMismatch, "an event batch of B")
	card := c.card(c.b, caseRef(1), epoch)
	_, err = s.Commits.Commit(c.ctx, c.a, turn.Bundle{InteractionInserts: []turn.InteractionInsert{{Interaction: card}}})
	c.errCode(err, turn.CodeBundleAccountMismatch, "a card of B")
	replay := turn.ReceivedReplay(c.turnID, c.conv, c.b, epoch)
	_, err = s.Commits.Commit(c.ctx, c.a, turn.Bundle{ReplayRecord: &replay})
	c.errCode(err, turn.CodeBundleAccountMismatch, "a replay record of B")
	_, err = s.Commits.Commit(c.ctx, c.a, turn.Bundle{Events: []turn.EventBatch{{AccountID: c.a, CaseKey: caseKey(), CommandID: turn.NewID(), Revision: 1}}})
	c.errCode(err, turn.CodeInvalidRecord, "an empty event batch")

	_, err = s.Interactions.LoadInteraction(c.ctx, c.b, card.ID)
	c.errIs(err, turn.ErrNotFound, "B's card")
	c.that(len(val(s.Events.LoadEvents(c.ctx, c.b, e))(c, "load B's events")) == 0, "B's events were written")
	_, err = s.Replay.LoadReplay(c.ctx, c.b, c.turnID)
	c.errIs(err, turn.ErrNotFound, "B's replay record")
}
