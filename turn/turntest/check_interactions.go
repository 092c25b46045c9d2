package turntest

import (
	"time"

	"github.com/steadhq/stead/turn"
)

// At most one open blocking card per account and case; non-blocking cards, other cases and
// other accounts do not take the slot; an id is inserted once.
func checkBlockingInteractionConflict(c *C) {
	ix := c.s.Interactions
	first := c.card(c.a, caseRef(1), epoch)
	c.ok(ix.InsertInteraction(c.ctx, first), "insert first")
	second := c.card(c.a, caseRef(1), at(1))
	c.errIs(ix.InsertInteraction(c.ctx, second), turn.ErrConflict, "a second blocking card on the case")
	_, err := ix.LoadInteraction(c.ctx, c.a, second.ID)
	c.errIs(err, turn.ErrNotFound, "the refused card must not be stored")
	c.ok(ix.InsertInteraction(c.ctx, c.card(c.a, caseRef(1), at(2), nonBlocking)), "a non-blocking card on the case")
	c.ok(ix.InsertInteraction(c.ctx, c.card(c.a, otherCase(1), at(3))), "a blocking card on another case")
	c.ok(ix.InsertInteraction(c.ctx, c.card(c.b, caseRef(1), at(4))), "a blocking card on the same case of another account")
	c.errIs(ix.InsertInteraction(c.ctx, first), turn.ErrConflict, "re-inserting first")
	open := val(ix.ListOpenForCase(c.ctx, c.a, caseKey()))(c, "list open for case")
	c.that(len(open) == 2, "list open for case: %d cards, want 2", len(open))
	c.that(open[0].Interaction.ID == first.ID, "list open for case: first card is %s, want first (%s)", open[0].Interaction.ID, first.ID)
	bad := c.card(c.a, otherCase(5), at(5))
	bad.Status = turn.InteractionResolving
	c.errCode(ix.InsertInteraction(c.ctx, bad), turn.CodeInvalidRecord, "inserting a card that is not active")
}

// A replacing insert supersedes an active occupant and never a resolving one.
func checkBlockingInteractionReplace(c *C) {
	ix := c.s.Interactions
	first := c.card(c.a, caseRef(1), epoch)
	c.ok(ix.InsertInteraction(c.ctx, first), "insert first")
	replacement := c.card(c.a, caseRef(1), at(1))
	got := val(ix.InsertReplacingBlocking(c.ctx, replacement))(c, "insert replacing")
	c.idsEq(got, []turn.ID{first.ID}, "ids invalidated by the replacing insert")
	c.that(replacement.ID != first.ID, "the replacement reused the occupant's id")
	rec := c.loadCard(c.a, first.ID)
	c.that(rec.Interaction.Status == turn.InteractionInvalidated, "first is %s, want invalidated", rec.Interaction.Status)
	c.that(rec.Invalidation != nil, "first has no invalidation record")
	c.same(rec.Invalidation.Reason, turn.SupersededBy(replacement.ID), "first's invalidation reason")
	c.that(rec.Invalidation.NewRevision == nil, "a superseded card records no new revision")
	c.that(c.cardStatus(replacement.ID) == turn.InteractionActive, "the replacement is not active")
	val(ix.BeginResolution(c.ctx, c.a, replacement.ID, turn.InteractionActive, "ack", c.turnID))(c, "begin resolution of the replacement")
	third := c.card(c.a, caseRef(1), at(2))
	_, err := ix.InsertReplacingBlocking(c.ctx, third)
	c.errIs(err, turn.ErrConflict, "replacing a resolving occupant")
	_, err = ix.LoadInteraction(c.ctx, c.a, third.ID)
	c.errIs(err, turn.ErrNotFound, "the refused replacement must not be stored")
	c.that(c.cardStatus(replacement.ID) == turn.InteractionResolving, "the resolving occupant moved")
	// A non-blocking card replaces nothing.
	got = val(ix.InsertReplacingBlocking(c.ctx, c.card(c.a, caseRef(1), at(3), nonBlocking)))(c, "non-blocking replacing insert")
	c.idsEq(got, nil, "ids invalidated by a non-blocking replacing insert")
}

// Another tenant's ids look exactly like ids that never existed, on reads and on writes.
func checkCrossTenantIsolation(c *C) {
	s := c.s
	c.ok(s.Conversations.CreateConversation(c.ctx, c.conversation(c.a, c.conv)), "create conversation")
	c.ok(s.Conversations.AppendUserTurn(c.ctx, userTurn(c.a, c.conv, c.turnID, epoch)), "append user turn")
	card := c.card(c.a, caseRef(1), epoch)
	c.ok(s.Interactions.InsertInteraction(c.ctx, card), "insert card")
	cmd := turn.NewID()
	val(s.Journal.BeginCommand(c.ctx, c.journalEntry(c.a, c.turnID, cmd, "isolation", epoch)))(c, "begin command")
	c.ok(s.Replay.PutReplay(c.ctx, turn.ReceivedReplay(c.turnID, c.conv, c.a, epoch)), "put replay")
	evs := newIDs(1)
	val(s.Events.AppendEvents(c.ctx, eventBatch(c.a, cmd, 1, evs, epoch)))(c, "append events")

	_, err := s.Conversations.LoadConversation(c.ctx, c.b, c.conv)
	c.errIs(err, turn.ErrNotFound, "load conversation as B")
	_, err = s.Conversations.LoadRecentTurns(c.ctx, c.b, c.conv, 10)
	c.errIs(err, turn.ErrNotFound, "load recent turns as B")
	_, err = s.Conversations.LoadTurn(c.ctx, c.b, c.turnID)
	c.errIs(err, turn.ErrNotFound, "load turn as B")
	_, err = s.Conversations.TurnPhase(c.ctx, c.b, c.turnID)
	c.errIs(err, turn.ErrNotFound, "turn phase as B")
	_, err = s.Conversations.SetTurnPhase(c.ctx, c.b, c.turnID, turn.PhaseFailed)
	c.errIs(err, turn.ErrNotFound, "set turn phase as B")
	c.errIs(s.Conversations.AppendAssistantTurn(c.ctx, c.b, assistantTurn(c.conv, c.turnID, card)), turn.ErrNotFound, "append assistant turn as B")
	_, err = s.Interactions.LoadInteraction(c.ctx, c.b, card.ID)
	c.errIs(err, turn.ErrNotFound, "load card as B")
	_, err = s.Interactions.BeginResolution(c.ctx, c.b, card.ID, turn.InteractionActive, "ack", c.turnID)
	c.errIs(err, turn.ErrNotFound, "begin resolution as B")
	_, err = s.Interactions.FinishResolution(c.ctx, c.b, card.ID, turn.ResolutionFailure("nope"))
	c.errIs(err, turn.ErrNotFound, "finish resolution as B")
	_, err = s.Journal.LoadCommand(c.ctx, c.b, cmd)
	c.errIs(err, turn.ErrNotFound, "load command as B")
	c.errIs(s.Journal.MarkExecuting(c.ctx, c.b, cmd), turn.ErrNotFound, "mark executing as B")
	c.errIs(s.Journal.CompleteCommand(c.ctx, c.b, cmd, turn.Failed("nope")), turn.ErrNotFound, "complete command as B")
	_, err = s.Replay.LoadReplay(c.ctx, c.b, c.turnID)
	c.errIs(err, turn.ErrNotFound, "load replay as B")
	_, err = s.Events.RedactPayload(c.ctx, c.b, evs[0], authority)
	c.errIs(err, turn.ErrNotFound, "redact as B")

	open := val(s.Interactions.ListOpenForConversation(c.ctx, c.b, c.conv))(c, "list open for conversation as B")
	c.that(len(open) == 0, "B sees %d of A's open cards", len(open))
	open = val(s.Interactions.ListOpenForCase(c.ctx, c.b, caseKey()))(c, "list open for case as B")
	c.that(len(open) == 0, "B sees %d of A's cards on the case", len(open))
	entries := val(s.Journal.CommandsForTurn(c.ctx, c.b, c.turnID))(c, "commands for turn as B")
	c.that(len(entries) == 0, "B sees %d of A's commands", len(entries))
	replays := val(s.Replay.ReplaysForConversation(c.ctx, c.b, c.conv, 10))(c, "replays for conversation as B")
	c.that(len(replays) == 0, "B sees %d of A's replay records", len(replays))
	n := val(s.Events.CountEvents(c.ctx, c.b, caseKey()))(c, "count events as B")
	c.that(n == 0, "B counts %d of A's events", n)
	markers := val(s.Conversations.ListUnfinishedTurns(c.ctx, turn.AccountScope(c.b), 10))(c, "unfinished turns of B")
	c.that(len(markers) == 0, "B sees %d of A's unfinished turns", len(markers))

	// B's attempts changed nothing of A's.
	c.that(c.cardStatus(card.ID) == turn.InteractionActive, "A's card moved after B's writes")
	entry := val(s.Journal.LoadCommand(c.ctx, c.a, cmd))(c, "load A's command")
	c.that(entry.Status == turn.JournalPending, "A's command is %s after B's writes", entry.Status)
	marker := val(s.Conversations.TurnPhase(c.ctx, c.a, c.turnID))(c, "A's turn phase")
	c.that(marker.Phase == turn.PhaseReceived, "A's turn phase is %s after B's writes", marker.Phase)
	_, err = s.Interactions.LoadInteraction(c.ctx, c.a, turn.NewID())
	c.errIs(err, turn.ErrNotFound, "load a never-existing card")
}

// Only an active card can begin resolving, once.
func checkBeginResolutionCAS(c *C) {
	ix := c.s.Interactions
	card := c.card(c.a, caseRef(1), epoch)
	c.ok(ix.InsertInteraction(c.ctx, card), "insert card")
	_, err := ix.BeginResolution(c.ctx, c.a, card.ID, turn.InteractionResolving, "ack", c.turnID)
	c.errIs(err, turn.ErrConflict, "begin expecting resolving on an active card")
	c.that(c.cardStatus(card.ID) == turn.InteractionActive, "a refused begin moved the card")
	_, err = ix.BeginResolution(c.ctx, c.a, turn.NewID(), turn.InteractionActive, "ack", c.turnID)
	c.errIs(err, turn.ErrNotFound, "begin on an unknown card")
	rec := val(ix.BeginResolution(c.ctx, c.a, card.ID, turn.InteractionActive, "ack", c.turnID))(c, "begin resolution")
	c.that(rec.Interaction.Status == turn.InteractionResolving, "status %s, want resolving", rec.Interaction.Status)
	c.that(rec.Interaction.ResolvedOptionID == "ack", "resolved option %q, want ack", rec.Interaction.ResolvedOptionID)
	c.that(rec.ResolvedByTurn == c.turnID, "resolved by %s, want %s", rec.ResolvedByTurn, c.turnID)
	c.that(!rec.Interaction.ResolvedAt.IsZero(), "resolved_at is not set")
	c.same(c.loadCard(c.a, card.ID), rec, "the stored record after begin")
	_, err = ix.BeginResolution(c.ctx, c.a, card.ID, turn.InteractionActive, "ack", c.turnID)
	c.errIs(err, turn.ErrConflict, "a second begin")
	_, err = ix.BeginResolution(c.ctx, c.a, card.ID, turn.InteractionResolving, "ack", c.turnID)
	c.errIs(err, turn.ErrConflict, "begin expecting resolving")
	c.same(c.loadCard(c.a, card.ID), rec, "the stored record after refused begins")
}

// Finishing is idempotent for the same outcome and refuses a different one.
func checkFinishResolutionIdempotent(c *C) {
	ix := c.s.Interactions
	resolved := c.card(c.a, caseRef(1), epoch)
	c.ok(ix.InsertInteraction(c.ctx, resolved), "insert")
	val(ix.BeginResolution(c.ctx, c.a, resolved.ID, turn.InteractionActive, "ack", c.turnID))(c, "begin")
	e := turn.NewID()
	first := val(ix.FinishResolution(c.ctx, c.a, resolved.ID, turn.Resolved(e)))(c, "finish resolved")
	c.that(first.Interaction.Status == turn.InteractionResolved, "status %s, want resolved", first.Interaction.Status)
	c.idsEq(first.ResolutionEventIDs, []turn.ID{e}, "resolution event ids")
	again := val(ix.FinishResolution(c.ctx, c.a, resolved.ID, turn.Resolved(e)))(c, "repeat the same finish")
	c.same(again, first, "the repeated finish's record")
	_, err := ix.FinishResolution(c.ctx, c.a, resolved.ID, turn.Resolved(turn.NewID()))
	c.errIs(err, turn.ErrConflict, "finish resolved with other events")
	_, err = ix.FinishResolution(c.ctx, c.a, resolved.ID, turn.ResolutionFailure("late"))
	c.errIs(err, turn.ErrConflict, "finish failed after resolved")
	c.same(c.loadCard(c.a, resolved.ID), first, "the record after refused finishes")

	restored := c.card(c.a, otherCase(1), at(1))
	c.ok(ix.InsertInteraction(c.ctx, restored), "insert restored")
	val(ix.BeginResolution(c.ctx, c.a, restored.ID, turn.InteractionActive, "ack", c.turnID))(c, "begin restored")
	rec := val(ix.FinishResolution(c.ctx, c.a, restored.ID, turn.RestoreActive()))(c, "restore active")
	c.that(rec.Interaction.Status == turn.InteractionActive, "status %s, want active", rec.Interaction.Status)
	c.that(rec.Interaction.ResolvedOptionID == "", "restored card keeps option %q", rec.Interaction.ResolvedOptionID)
	c.that(rec.ResolvedByTurn.IsZero(), "restored card keeps its answering turn")
	c.that(rec.Interaction.ResolvedAt.IsZero(), "restored card keeps resolved_at")
	val(ix.FinishResolution(c.ctx, c.a, restored.ID, turn.RestoreActive()))(c, "restore active again")
}

// The revision sweep retires active cards bound to another revision, sparing
// revision-independent cards and other cases.
func checkRevisionInvalidationRespectsIndependence(c *C) {
	ix := c.s.Interactions
	bound := c.card(c.a, caseRef(1), epoch)
	independent := c.card(c.a, caseRef(1), at(1), nonBlocking, revisionIndependent)
	current := c.card(c.a, caseRef(2), at(2), nonBlocking)
	elsewhere := c.card(c.a, otherCase(1), at(3))
	for _, card := range []turn.Interaction{bound, independent, current, elsewhere} {
		c.ok(ix.InsertInteraction(c.ctx, card), "insert %s", card.ID)
	}
	got := val(ix.InvalidateForCase(c.ctx, c.a, caseKey(), 2, turn.RevisionChanged()))(c, "invalidate for case")
	c.idsEq(got, []turn.ID{bound.ID}, "invalidated ids")
	rec := c.loadCard(c.a, bound.ID)
	c.that(rec.Interaction.Status == turn.InteractionInvalidated, "bound is %s, want invalidated", rec.Interaction.Status)
	c.that(rec.Invalidation != nil, "bound has no invalidation record")
	c.same(rec.Invalidation.Reason, turn.RevisionChanged(), "bound's invalidation reason")
	c.that(rec.Invalidation.NewRevision != nil && *rec.Invalidation.NewRevision == 2, "bound's new revision is %v, want 2", rec.Invalidation.NewRevision)
	for _, card := range []turn.Interaction{independent, current, elsewhere} {
		c.that(c.cardStatus(card.ID) == turn.InteractionActive, "card %s was swept", card.ID)
	}
	got = val(ix.InvalidateForCase(c.ctx, c.b, caseKey(), 3, turn.RevisionChanged()))(c, "invalidate as B")
	c.idsEq(got, nil, "B's sweep of A's case")
}

// A card expires once, at its expiry instant (inclusive).
func checkInteractionExpiry(c *C) {
	ix := c.s.Interactions
	expiring := c.card(c.a, caseRef(1), epoch, expiresIn(60*time.Second))
	permanent := c.card(c.a, caseRef(1), epoch, nonBlocking)
	c.ok(ix.InsertInteraction(c.ctx, expiring), "insert expiring")
	c.ok(ix.InsertInteraction(c.ctx, permanent), "insert permanent")
	got := val(ix.ExpireDue(c.ctx, at(30)))(c, "expire at 30 s")
	c.idsEq(only(got, expiring.ID, permanent.ID), nil, "expired at 30 s")
	got = val(ix.ExpireDue(c.ctx, at(60)))(c, "expire at 60 s")
	c.idsEq(only(got, expiring.ID, permanent.ID), []turn.ID{expiring.ID}, "expired at 60 s")
	c.that(c.cardStatus(expiring.ID) == turn.InteractionExpired, "expiring is %s, want expired", c.cardStatus(expiring.ID))
	c.that(c.cardStatus(permanent.ID) == turn.InteractionActive, "permanent is not active")
	got = val(ix.ExpireDue(c.ctx, at(600)))(c, "expire at 600 s")
	c.idsEq(only(got, expiring.ID, permanent.ID), nil, "expired again at 600 s")
}

// An answered blocking card is remembered per bound revision.
func checkAnsweredBlockingCardIsRemembered(c *C) {
	ix := c.s.Interactions
	answered := func(rev turn.Revision) bool {
		return val(ix.BlockingAnsweredAt(c.ctx, c.a, caseKey(), rev))(c, "blocking answered at %d", rev)
	}
	c.that(!answered(1), "answered with no card")
	card := c.card(c.a, caseRef(1), epoch)
	c.ok(ix.InsertInteraction(c.ctx, card), "insert send_confirmation")
	c.that(!answered(1), "answered before any answer")
	val(ix.BeginResolution(c.ctx, c.a, card.ID, turn.InteractionActive, "not_now", c.turnID))(c, "begin")
	c.that(!answered(1), "answered while still resolving")
	val(ix.FinishResolution(c.ctx, c.a, card.ID, turn.Resolved()))(c, "finish")
	c.that(answered(1), "not answered at revision 1 after the decline")
	c.that(!answered(2), "answered at revision 2")
	ok := val(ix.BlockingAnsweredAt(c.ctx, c.b, caseKey(), 1))(c, "blocking answered as B")
	c.that(!ok, "B sees A's answer")
	// An invalidated blocking card was never answered.
	other := c.card(c.a, otherCase(3), epoch)
	c.ok(ix.InsertInteraction(c.ctx, other), "insert other")
	val(ix.InvalidateForCase(c.ctx, c.a, otherCaseKey(), 4, turn.RevisionChanged()))(c, "invalidate other")
	ok = val(ix.BlockingAnsweredAt(c.ctx, c.a, otherCaseKey(), 3))(c, "blocking answered on the other case")
	c.that(!ok, "an invalidated card counts as answered")
}

// The operator's invalidation retires every active card whatever its revision.
func checkAdministrativeInvalidationIgnoresTheRevision(c *C) {
	ix := c.s.Interactions
	plain := c.card(c.a, caseRef(4), epoch)
	independent := c.card(c.a, caseRef(4), at(1), nonBlocking, revisionIndependent)
	c.ok(ix.InsertInteraction(c.ctx, plain), "insert plain")
	c.ok(ix.InsertInteraction(c.ctx, independent), "insert independent")
	got := val(ix.InvalidateForCase(c.ctx, c.a, caseKey(), 4, turn.RevisionChanged()))(c, "invalidate for case at its own revision")
	c.idsEq(got, nil, "invalidated by a sweep to the current revision")
	got = val(ix.InvalidateCaseCards(c.ctx, c.a, caseKey(), turn.Administrative("conformance.withdrawn")))(c, "invalidate case cards")
	c.idsEq(got, []turn.ID{plain.ID, independent.ID}, "administratively invalidated ids")
	for _, id := range got {
		rec := c.loadCard(c.a, id)
		c.that(rec.Interaction.Status == turn.InteractionInvalidated, "%s is %s, want invalidated", id, rec.Interaction.Status)
		c.that(rec.Invalidation != nil, "%s has no invalidation record", id)
		c.same(rec.Invalidation.Reason, turn.Administrative("conformance.withdrawn"), "invalidation reason")
		c.that(rec.Invalidation.NewRevision == nil, "an administrative invalidation records a new revision")
	}
}

// A turn's cards are the ones it created and the ones it answered, whatever became of them,
// ordered by (created_at, id), and only the account's own.
func checkInteractionsForTurn(c *C) {
	ix := c.s.Interactions
	other := turn.NewID() // another turn of the conversation
	byOther := func(it turn.Interaction) turn.Interaction { it.CreatedByTurn = other; return it }

	created := c.card(c.a, caseRef(1), at(2))
	c.ok(ix.InsertInteraction(c.ctx, created), "insert a card the turn created")
	retired := c.card(c.a, otherCase(1), at(3), nonBlocking)
	c.ok(ix.InsertInteraction(c.ctx, retired), "insert a second card the turn created")
	val(ix.InvalidateCaseCards(c.ctx, c.a, otherCaseKey(), turn.Administrative("conformance")))(c, "invalidate the second card")
	answered := byOther(c.card(c.a, caseRef(1), at(1), nonBlocking))
	c.ok(ix.InsertInteraction(c.ctx, answered), "insert a card another turn created")
	val(ix.BeginResolution(c.ctx, c.a, answered.ID, turn.InteractionActive, "ack", c.turnID))(c, "the turn answers it")
	val(ix.FinishResolution(c.ctx, c.a, answered.ID, turn.Resolved()))(c, "settle the answer")
	c.ok(ix.InsertInteraction(c.ctx, byOther(c.card(c.a, caseRef(1), epoch, nonBlocking))), "insert a card the turn never touched")
	foreign := c.card(c.b, caseRef(1), epoch) // B's card names the same turn id
	c.ok(ix.InsertInteraction(c.ctx, foreign), "insert a card of B")

	got := val(ix.InteractionsForTurn(c.ctx, c.a, c.turnID))(c, "the turn's cards")
	c.idsEq(interactionIDs(got), []turn.ID{answered.ID, created.ID, retired.ID}, "the turn's cards, by (created_at, id)")
	c.that(got[0].Interaction.Status == turn.InteractionResolved && got[0].ResolvedByTurn == c.turnID,
		"the answered card is %s, answered by %v", got[0].Interaction.Status, got[0].ResolvedByTurn)
	c.that(got[2].Interaction.Status == turn.InteractionInvalidated, "the retired card is %s", got[2].Interaction.Status)
	c.same(got[1], c.loadCard(c.a, created.ID), "a listed card is the stored record")
	ofOther := val(ix.InteractionsForTurn(c.ctx, c.a, other))(c, "the other turn's cards")
	c.that(len(ofOther) == 2, "the other turn created two cards, it lists %d", len(ofOther))
	ofB := val(ix.InteractionsForTurn(c.ctx, c.b, c.turnID))(c, "the turn id's cards under B")
	c.idsEq(interactionIDs(ofB), []turn.ID{foreign.ID}, "B's cards for the same turn id")
	none := val(ix.InteractionsForTurn(c.ctx, c.a, turn.NewID()))(c, "cards of an unknown turn")
	c.that(len(none) == 0, "an unknown turn lists %d cards", len(none))
}
