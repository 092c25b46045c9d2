package turntest

import (
	"encoding/json"
	"slices"

	"github.com/steadhq/stead/turn"
)

// One replay record per turn, wholly replaced by a put, listed newest-last.
func checkReplayPutGet(c *C) {
	rp := c.s.Replay
	received := turn.ReceivedReplay(c.turnID, c.conv, c.a, epoch)
	c.ok(rp.PutReplay(c.ctx, received), "put received")
	c.same(val(rp.LoadReplay(c.ctx, c.a, c.turnID))(c, "load"), received, "the stored record")
	advanced := received
	advanced.Phase = turn.PhaseCommitted
	advanced.RecordedAt = at(1)
	advanced.EventIDs = newIDs(1)
	advanced.Details = json.RawMessage(`{"understanding":{"intent":"conformance"},"score":0.5}`)
	c.ok(rp.PutReplay(c.ctx, advanced), "put advanced")
	c.same(val(rp.LoadReplay(c.ctx, c.a, c.turnID))(c, "load advanced"), advanced, "the replaced record")
	list := val(rp.ReplaysForConversation(c.ctx, c.a, c.conv, 10))(c, "list")
	c.that(len(list) == 1, "list has %d records, want one per turn", len(list))

	older, newer := turn.NewID(), turn.NewID()
	c.ok(rp.PutReplay(c.ctx, turn.ReceivedReplay(older, c.conv, c.a, at(2))), "put older")
	c.ok(rp.PutReplay(c.ctx, turn.ReceivedReplay(newer, c.conv, c.a, at(3))), "put newer")
	c.ok(rp.PutReplay(c.ctx, turn.ReceivedReplay(turn.NewID(), turn.NewID(), c.a, at(4))), "put in another conversation")
	list = val(rp.ReplaysForConversation(c.ctx, c.a, c.conv, 2))(c, "list newest two")
	c.that(len(list) == 2 && list[0].TurnID == older && list[1].TurnID == newer, "the newest two are not [older, newer], oldest first")
	_, err := rp.LoadReplay(c.ctx, c.a, turn.NewID())
	c.errIs(err, turn.ErrNotFound, "load an unknown turn")
	_, err = rp.LoadReplay(c.ctx, c.b, c.turnID)
	c.errIs(err, turn.ErrNotFound, "load as B")
}

// Conversations, user and assistant turns and phase markers round-trip, with their rules.
func checkConversationTurnPersistence(c *C) {
	cv := c.s.Conversations
	conv := c.conversation(c.a, c.conv)
	c.ok(cv.CreateConversation(c.ctx, conv), "create conversation")
	c.errIs(cv.CreateConversation(c.ctx, conv), turn.ErrConflict, "create it again")
	c.same(val(cv.LoadConversation(c.ctx, c.a, c.conv))(c, "load conversation"), conv, "the stored conversation")

	user := userTurn(c.a, c.conv, c.turnID, epoch)
	c.ok(cv.AppendUserTurn(c.ctx, user), "append user turn")
	c.errIs(cv.AppendUserTurn(c.ctx, user), turn.ErrConflict, "append it again")
	c.errIs(cv.AppendUserTurn(c.ctx, userTurn(c.a, turn.NewID(), turn.NewID(), epoch)), turn.ErrNotFound, "a turn of a missing conversation")
	c.errIs(cv.AppendUserTurn(c.ctx, userTurn(c.b, c.conv, turn.NewID(), epoch)), turn.ErrNotFound, "a turn of B in A's conversation")
	marker := val(cv.TurnPhase(c.ctx, c.a, c.turnID))(c, "turn phase")
	c.that(marker.Phase == turn.PhaseReceived && marker.AccountID == c.a && marker.ConversationID == c.conv && marker.TurnID == c.turnID,
		"the new turn's marker is %+v", marker)
	c.that(!marker.UpdatedAt.IsZero(), "the marker has no updated_at")

	for _, p := range []turn.Phase{turn.PhaseInterpreted, turn.PhaseExecuting, turn.PhaseCommitted} {
		m := val(cv.SetTurnPhase(c.ctx, c.a, c.turnID, p))(c, "set phase %s", p)
		c.that(m.Phase == p, "set phase %s returned %s", p, m.Phase)
	}
	markers := val(cv.ListUnfinishedTurns(c.ctx, turn.AccountScope(c.a), 10))(c, "unfinished turns of A")
	c.that(len(markers) == 1 && markers[0].TurnID == c.turnID && markers[0].Phase == turn.PhaseCommitted, "unfinished turns of A: %+v", markers)

	card := c.card(c.a, caseRef(1), epoch)
	wrong := assistantTurn(turn.NewID(), c.turnID, card)
	c.errCode(cv.AppendAssistantTurn(c.ctx, c.a, wrong), turn.CodeIdentityMismatch, "an assistant turn of another conversation")
	assistant := assistantTurn(c.conv, c.turnID, card)
	c.ok(cv.AppendAssistantTurn(c.ctx, c.a, assistant), "append assistant turn")
	c.errIs(cv.AppendAssistantTurn(c.ctx, c.a, assistant), turn.ErrConflict, "append it again")
	c.errIs(cv.AppendAssistantTurn(c.ctx, c.a, assistantTurn(c.conv, turn.NewID(), card)), turn.ErrNotFound, "an assistant turn for an unknown turn")
	stored := val(cv.LoadTurn(c.ctx, c.a, c.turnID))(c, "load turn")
	c.same(stored.User, user, "the stored user turn")
	c.that(stored.Assistant != nil, "the stored turn has no assistant turn")
	c.same(*stored.Assistant, assistant, "the stored assistant turn")
	c.that(len(stored.Assistant.Blocks) == 3 && stored.Assistant.Blocks[0].ID == "block-notice" &&
		stored.Assistant.Blocks[1].ID == "block-card" && stored.Assistant.Blocks[2].ID == "block-artifact", "block order changed")
	c.that(stored.Phase == turn.PhaseCommitted, "the stored turn's phase is %s", stored.Phase)

	val(cv.SetTurnPhase(c.ctx, c.a, c.turnID, turn.PhaseDelivered))(c, "set delivered")
	val(cv.SetTurnPhase(c.ctx, c.a, c.turnID, turn.PhaseDelivered))(c, "set delivered again")
	_, err := cv.SetTurnPhase(c.ctx, c.a, c.turnID, turn.PhaseComposed)
	c.errIs(err, turn.ErrConflict, "leave the terminal phase")
	c.that(val(cv.TurnPhase(c.ctx, c.a, c.turnID))(c, "phase").Phase == turn.PhaseDelivered, "a refused phase change moved the marker")
	_, err = cv.SetTurnPhase(c.ctx, c.a, turn.NewID(), turn.PhaseComposed)
	c.errIs(err, turn.ErrNotFound, "set the phase of an unknown turn")
	markers = val(cv.ListUnfinishedTurns(c.ctx, turn.AllAccounts(), 10))(c, "unfinished turns of every account")
	for _, m := range markers {
		c.that(m.AccountID != c.a, "a delivered turn of A is listed as unfinished")
	}
	markers = val(cv.ListUnfinishedTurns(c.ctx, turn.AccountScope(c.a), 10))(c, "unfinished turns of A")
	c.that(len(markers) == 0, "A still has %d unfinished turns", len(markers))

	for i := 2; i <= 4; i++ {
		c.ok(cv.AppendUserTurn(c.ctx, userTurn(c.a, c.conv, turn.NewID(), at(i))), "append turn at %d", i)
	}
	recent := val(cv.LoadRecentTurns(c.ctx, c.a, c.conv, 2))(c, "recent turns")
	c.that(len(recent) == 2, "recent turns: %d, want 2", len(recent))
	c.that(recent[0].User.ReceivedAt.Equal(at(3)) && recent[1].User.ReceivedAt.Equal(at(4)),
		"recent turns are not the newest two, oldest first: %v, %v", recent[0].User.ReceivedAt, recent[1].User.ReceivedAt)
	_, err = cv.LoadRecentTurns(c.ctx, c.b, c.conv, 2)
	c.errIs(err, turn.ErrNotFound, "recent turns as B")
	_, err = cv.LoadRecentTurns(c.ctx, c.a, c.conv, -1)
	c.errIs(err, turn.ErrInvalid, "a negative limit")
}

// An account's conversations are listed by (created_at, id), the newest limit of them returned
// oldest first, and another tenant's never among them.
func checkConversationsListedNewestLastPerAccount(c *C) {
	cv := c.s.Conversations
	none := val(cv.ListConversations(c.ctx, c.a, 10))(c, "conversations of an account that has none")
	c.that(len(none) == 0, "an account without conversations lists %d", len(none))

	// Created out of order, two of them at the same instant: the id breaks the tie.
	var want []turn.Conversation
	for _, s := range []int{3, 1, 2, 2} {
		conv := c.conversation(c.a, turn.NewID())
		conv.CreatedAt = at(s)
		c.ok(cv.CreateConversation(c.ctx, conv), "create a conversation at %d", s)
		want = append(want, conv)
	}
	slices.SortFunc(want, func(x, y turn.Conversation) int {
		if d := x.CreatedAt.Compare(y.CreatedAt); d != 0 {
			return d
		}
		return x.ID.Compare(y.ID)
	})
	other := c.conversation(c.b, turn.NewID())
	other.CreatedAt = at(9) // newer than every one of A's
	c.ok(cv.CreateConversation(c.ctx, other), "create a conversation of B")

	all := val(cv.ListConversations(c.ctx, c.a, 10))(c, "conversations of A")
	c.same(all, want, "every conversation of A, oldest first")
	newest := val(cv.ListConversations(c.ctx, c.a, 2))(c, "the newest two of A")
	c.same(newest, want[2:], "the newest two conversations of A, oldest first")
	c.same(val(cv.ListConversations(c.ctx, c.a, 0))(c, "a zero limit"), want, "a zero limit lists turn.DefaultLimit conversations: every one of A")
	ofB := val(cv.ListConversations(c.ctx, c.b, 10))(c, "conversations of B")
	c.that(len(ofB) == 1 && ofB[0].ID == other.ID, "B lists %d conversations, want its own one", len(ofB))
}
