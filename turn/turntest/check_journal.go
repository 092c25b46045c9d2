package turntest

import (
	"encoding/json"

	"github.com/steadhq/stead/turn"
)

// One Fresh per (account, key); every repeat replays the persisted entry and outcome.
func checkJournalIdempotencyReplay(c *C) {
	j := c.s.Journal
	c1 := turn.NewID()
	first := c.journalEntry(c.a, c.turnID, c1, "shared-key", epoch)
	adm := val(j.BeginCommand(c.ctx, first))(c, "begin first")
	c.that(adm.Fresh, "the first admission of a key is not fresh")
	c.same(adm.Entry, first, "the fresh admission's entry")
	second := c.journalEntry(c.a, c.turnID, turn.NewID(), "shared-key", at(1))
	adm = val(j.BeginCommand(c.ctx, second))(c, "begin second with the same key")
	c.that(!adm.Fresh, "a second admission of the key is fresh")
	c.that(adm.Entry.CommandID == c1, "the replay names %s, want the first command %s", adm.Entry.CommandID, c1)
	c.that(adm.Entry.SameCommand(second), "the replayed entry is not the same command as an identical request")
	_, err := j.LoadCommand(c.ctx, c.a, second.CommandID)
	c.errIs(err, turn.ErrNotFound, "the replayed request's command must not be stored")

	c.ok(j.MarkExecuting(c.ctx, c.a, c1), "mark executing")
	outcome := turn.Committed(2, turn.NewID())
	c.ok(j.CompleteCommand(c.ctx, c.a, c1, outcome), "complete committed")
	c.ok(j.CompleteCommand(c.ctx, c.a, c1, outcome), "complete committed again")
	c.errIs(j.CompleteCommand(c.ctx, c.a, c1, turn.Failed("late")), turn.ErrConflict, "complete failed after committed")

	adm = val(j.BeginCommand(c.ctx, second))(c, "begin second again")
	c.that(!adm.Fresh, "a repeat after completion is fresh")
	c.that(adm.Entry.Status == turn.JournalCommitted, "the replay's status is %s, want committed", adm.Entry.Status)
	c.that(adm.Entry.Result != nil, "the replay carries no outcome")
	c.same(*adm.Entry.Result, outcome, "the replayed outcome")
	c.that(!adm.Entry.CompletedAt.IsZero(), "completed_at is not set")

	different := c.journalEntry(c.a, c.turnID, turn.NewID(), "shared-key", at(2))
	different.CommandPayload = json.RawMessage(`{"key":"something-else"}`)
	adm = val(j.BeginCommand(c.ctx, different))(c, "begin a different command with the same key")
	c.that(!adm.Fresh, "a reused key is fresh")
	c.that(!adm.Entry.SameCommand(different), "the replay of a reused key claims to be the same command")

	_, err = j.BeginCommand(c.ctx, c.journalEntry(c.a, c.turnID, c1, "another-key", at(3)))
	c.errIs(err, turn.ErrConflict, "the same command id under another key")
	adm = val(j.BeginCommand(c.ctx, c.journalEntry(c.b, c.turnID, turn.NewID(), "shared-key", epoch)))(c, "begin the key as B")
	c.that(adm.Fresh, "keys of another account are not independent")
}

// After a crash, pending and executing entries are resumable, in creation order.
func checkPendingForTurnAfterPartialWrite(c *C) {
	j := c.s.Journal
	pending, executing, committed := turn.NewID(), turn.NewID(), turn.NewID()
	for i, cmd := range []turn.ID{pending, executing, committed} {
		val(j.BeginCommand(c.ctx, c.journalEntry(c.a, c.turnID, cmd, cmd.String(), at(i))))(c, "begin %d", i)
	}
	val(j.BeginCommand(c.ctx, c.journalEntry(c.a, turn.NewID(), turn.NewID(), "other-turn", at(9))))(c, "begin for another turn")
	c.ok(j.MarkExecuting(c.ctx, c.a, executing), "mark executing")
	c.ok(j.MarkExecuting(c.ctx, c.a, executing), "mark executing again")
	c.ok(j.CompleteCommand(c.ctx, c.a, committed, turn.Committed(1)), "complete directly from pending")

	got := val(j.PendingForTurn(c.ctx, c.a, c.turnID))(c, "pending for turn")
	c.idsEq(commandIDs(got), []turn.ID{pending, executing}, "pending for turn")
	c.that(got[0].Status == turn.JournalPending && got[1].Status == turn.JournalExecuting,
		"pending for turn statuses %s, %s", got[0].Status, got[1].Status)
	all := val(j.CommandsForTurn(c.ctx, c.a, c.turnID))(c, "commands for turn")
	c.idsEq(commandIDs(all), []turn.ID{pending, executing, committed}, "commands for turn")
	c.errIs(j.MarkExecuting(c.ctx, c.a, committed), turn.ErrConflict, "mark executing a committed command")
	c.errIs(j.MarkExecuting(c.ctx, c.a, turn.NewID()), turn.ErrNotFound, "mark executing an unknown command")
	got = val(j.PendingForTurn(c.ctx, c.b, c.turnID))(c, "pending for turn as B")
	c.that(len(got) == 0, "B sees %d of A's pending commands", len(got))
}

// A command awaiting confirmation is not resumable work until it is marked executing.
func checkAwaitingConfirmationIsNeverResumed(c *C) {
	j := c.s.Journal
	cmd := turn.NewID()
	e := c.journalEntry(c.a, c.turnID, cmd, "confirm", epoch)
	e.Status = turn.JournalAwaitingConfirmation
	adm := val(j.BeginCommand(c.ctx, e))(c, "begin awaiting confirmation")
	c.that(adm.Fresh, "not fresh")
	got := val(j.PendingForTurn(c.ctx, c.a, c.turnID))(c, "pending for turn")
	c.that(len(got) == 0, "an entry awaiting confirmation is listed as pending")
	all := val(j.CommandsForTurn(c.ctx, c.a, c.turnID))(c, "commands for turn")
	c.that(len(all) == 1 && all[0].Status == turn.JournalAwaitingConfirmation, "commands for turn: %v", commandIDs(all))
	c.ok(j.MarkExecuting(c.ctx, c.a, cmd), "mark executing after confirmation")
	got = val(j.PendingForTurn(c.ctx, c.a, c.turnID))(c, "pending for turn after confirmation")
	c.idsEq(commandIDs(got), []turn.ID{cmd}, "pending after confirmation")
}
