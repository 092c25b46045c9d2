package turntest

import (
	"time"

	"github.com/steadhq/stead/turn"
)

// claimLimit is the batch size of the suite's claims. It is large so that, on a database
// shared with other writers, older due rows of theirs cannot crowd this check's rows out of a
// claim; the check then only looks at its own rows.
const claimLimit = 1000

func (c *C) claim(now int, worker string, mine ...turn.ID) []turn.OutboxEntry {
	got := val(c.s.Outbox.ClaimDue(c.ctx, at(now), claimLimit, worker))(c, "claim due at %d s", now)
	var out []turn.OutboxEntry
	for _, e := range got {
		if contains(mine, e.OutboxID) {
			out = append(out, e)
		}
	}
	return out
}

func (c *C) outboxRecord(id turn.ID) turn.OutboxRecord {
	return val(c.s.Outbox.LoadOutbox(c.ctx, id))(c, "load outbox %s", id)
}

// Claims are exclusive; reschedules, completion, unknown outcomes, reaping and failures follow
// the dispatch state machine.
func checkOutboxClaimExclusivityAndReschedule(c *C) {
	ob := c.s.Outbox
	cmd := turn.NewID()
	first := c.outboxEntry(turn.NewID(), cmd, "first", epoch)
	second := c.outboxEntry(turn.NewID(), cmd, "second", at(1))
	c.ok(ob.Enqueue(c.ctx, first), "enqueue first")
	c.ok(ob.Enqueue(c.ctx, second), "enqueue second")
	c.errIs(ob.Enqueue(c.ctx, c.outboxEntry(turn.NewID(), cmd, "first", at(2))), turn.ErrConflict, "the same destination and key again")
	c.errIs(ob.Enqueue(c.ctx, c.outboxEntry(first.OutboxID, cmd, "first-again", at(2))), turn.ErrConflict, "the same outbox id again")
	dispatching := c.outboxEntry(turn.NewID(), cmd, "dispatching", at(2))
	dispatching.Status = turn.OutboxDispatching
	c.errCode(ob.Enqueue(c.ctx, dispatching), turn.CodeInvalidRecord, "enqueue a dispatching entry")
	listed := val(ob.OutboxForCommand(c.ctx, cmd))(c, "outbox for command")
	c.that(len(listed) == 2 && listed[0].Entry.OutboxID == first.OutboxID && listed[1].Entry.OutboxID == second.OutboxID,
		"outbox for command lists %d rows, want [first, second]", len(listed))
	c.same(listed[0].Entry, first, "the stored first entry")
	c.that(listed[0].Claim == nil, "a fresh row is claimed")

	claimed := c.claim(10, "worker-a", first.OutboxID, second.OutboxID)
	c.idsEq(outboxIDs(claimed), []turn.ID{first.OutboxID, second.OutboxID}, "claimed by worker-a")
	for _, e := range claimed {
		c.that(e.Status == turn.OutboxDispatching && e.AttemptCount == 1, "claimed row is %s with %d attempts", e.Status, e.AttemptCount)
	}
	rec := c.outboxRecord(first.OutboxID)
	c.that(rec.Claim != nil && rec.Claim.WorkerID == "worker-a" && rec.Claim.ClaimedAt.Equal(at(10)), "first's claim is %+v", rec.Claim)
	c.idsEq(outboxIDs(c.claim(11, "worker-b", first.OutboxID, second.OutboxID)), nil, "claimed again by worker-b")

	c.ok(ob.Reschedule(c.ctx, first.OutboxID, at(20)), "reschedule first")
	rec = c.outboxRecord(first.OutboxID)
	c.that(rec.Entry.Status == turn.OutboxPending && rec.Claim == nil && rec.Entry.NextAttemptAt.Equal(at(20)),
		"after reschedule first is %s, claim %v, due %v", rec.Entry.Status, rec.Claim, rec.Entry.NextAttemptAt)
	c.idsEq(outboxIDs(c.claim(15, "worker-b", first.OutboxID, second.OutboxID)), nil, "claimed before the due time")
	claimed = c.claim(20, "worker-b", first.OutboxID, second.OutboxID)
	c.idsEq(outboxIDs(claimed), []turn.ID{first.OutboxID}, "claimed at the due time")
	c.that(claimed[0].AttemptCount == 2, "attempt count %d, want 2", claimed[0].AttemptCount)

	c.ok(ob.MarkCompleted(c.ctx, second.OutboxID), "complete second")
	c.ok(ob.MarkCompleted(c.ctx, second.OutboxID), "complete second again")
	rec = c.outboxRecord(second.OutboxID)
	c.that(rec.Entry.Status == turn.OutboxCompleted && rec.Claim == nil && !rec.Entry.CompletedAt.IsZero(),
		"second is %s, claim %v", rec.Entry.Status, rec.Claim)
	c.errIs(ob.Reschedule(c.ctx, second.OutboxID, at(30)), turn.ErrConflict, "reschedule a completed row")

	c.ok(ob.MarkOutcomeUnknown(c.ctx, first.OutboxID, "remote-123"), "mark first outcome unknown")
	rec = c.outboxRecord(first.OutboxID)
	c.that(rec.Entry.Status == turn.OutboxOutcomeUnknown && rec.RemoteRef == "remote-123" && rec.Claim == nil,
		"first is %s, remote ref %q, claim %v", rec.Entry.Status, rec.RemoteRef, rec.Claim)
	c.ok(ob.MarkOutcomeUnknown(c.ctx, first.OutboxID, "remote-456"), "mark outcome unknown again")
	c.that(c.outboxRecord(first.OutboxID).RemoteRef == "remote-123", "a repeated unknown outcome replaced the remote ref")
	c.idsEq(outboxIDs(c.claim(40, "worker-c", first.OutboxID)), nil, "an unknown outcome claimed by a sweep")
	c.ok(ob.MarkCompleted(c.ctx, first.OutboxID), "reconcile first as completed")

	third := c.outboxEntry(turn.NewID(), cmd, "third", at(50))
	c.ok(ob.Enqueue(c.ctx, third), "enqueue third")
	c.idsEq(outboxIDs(c.claim(60, "worker-d", third.OutboxID)), []turn.ID{third.OutboxID}, "claim third")
	released := val(ob.ReleaseExpiredClaims(c.ctx, at(60)))(c, "release claims taken before 60 s")
	c.idsEq(only(released, third.OutboxID), nil, "released before 60 s (strictly before)")
	released = val(ob.ReleaseExpiredClaims(c.ctx, at(120)))(c, "release claims taken before 120 s")
	c.idsEq(only(released, third.OutboxID), []turn.ID{third.OutboxID}, "released before 120 s")
	rec = c.outboxRecord(third.OutboxID)
	c.that(rec.Entry.Status == turn.OutboxPending && rec.Claim == nil && rec.Entry.NextAttemptAt.IsZero() && rec.Entry.AttemptCount == 1,
		"released third is %s, claim %v, due %v, attempts %d", rec.Entry.Status, rec.Claim, rec.Entry.NextAttemptAt, rec.Entry.AttemptCount)

	c.idsEq(outboxIDs(c.claim(130, "worker-e", third.OutboxID)), []turn.ID{third.OutboxID}, "claim third again")
	c.ok(ob.MarkFailed(c.ctx, third.OutboxID, "remote_busy", at(140)), "fail third with a retry")
	rec = c.outboxRecord(third.OutboxID)
	c.that(rec.Entry.Status == turn.OutboxPending && rec.LastFailure == "remote_busy" && rec.Entry.NextAttemptAt.Equal(at(140)) && rec.Claim == nil,
		"third after a retryable failure is %s, last failure %q", rec.Entry.Status, rec.LastFailure)
	c.idsEq(outboxIDs(c.claim(140, "worker-e", third.OutboxID)), []turn.ID{third.OutboxID}, "claim third at its retry time")
	c.ok(ob.MarkFailed(c.ctx, third.OutboxID, "remote_refused", time.Time{}), "fail third for good")
	rec = c.outboxRecord(third.OutboxID)
	c.that(rec.Entry.Status == turn.OutboxFailed && rec.LastFailure == "remote_refused" && rec.Claim == nil && !rec.Entry.CompletedAt.IsZero(),
		"third after a definite failure is %s, last failure %q", rec.Entry.Status, rec.LastFailure)
	c.ok(ob.MarkFailed(c.ctx, third.OutboxID, "remote_refused_again", time.Time{}), "a repeated definite failure")
	c.that(c.outboxRecord(third.OutboxID).LastFailure == "remote_refused", "a repeated definite failure rewrote the first reason")
	_, err := ob.LoadOutbox(c.ctx, turn.NewID())
	c.errIs(err, turn.ErrNotFound, "load an unknown row")
	c.errIs(ob.MarkCompleted(c.ctx, turn.NewID()), turn.ErrNotFound, "complete an unknown row")
}

// A refused settlement writes nothing at all.
func checkRefusedSettlementWritesNothing(c *C) {
	ob := c.s.Outbox
	row := c.outboxEntry(turn.NewID(), turn.NewID(), "refused", epoch)
	c.ok(ob.Enqueue(c.ctx, row), "enqueue")
	c.errIs(ob.MarkCompleted(c.ctx, row.OutboxID), turn.ErrConflict, "complete a pending row")
	c.errIs(ob.MarkFailed(c.ctx, row.OutboxID, "never-sent", time.Time{}), turn.ErrConflict, "fail a pending row for good")
	c.errIs(ob.MarkOutcomeUnknown(c.ctx, row.OutboxID, "r"), turn.ErrConflict, "unknown outcome of a pending row")
	c.same(c.outboxRecord(row.OutboxID).Entry, row, "the pending row after refused settlements")
	c.idsEq(outboxIDs(c.claim(10, "worker-a", row.OutboxID)), []turn.ID{row.OutboxID}, "claim")
	c.ok(ob.MarkFailed(c.ctx, row.OutboxID, "remote_refused", time.Time{}), "fail for good")
	settled := c.outboxRecord(row.OutboxID)
	c.errIs(ob.MarkFailed(c.ctx, row.OutboxID, "a reason that must not be stored", at(60)), turn.ErrConflict, "retry a failed row")
	c.same(c.outboxRecord(row.OutboxID), settled, "the failed row after a refused retry")
	c.errIs(ob.Reschedule(c.ctx, row.OutboxID, at(60)), turn.ErrConflict, "reschedule a failed row")
	c.errIs(ob.MarkCompleted(c.ctx, row.OutboxID), turn.ErrConflict, "complete a failed row")
	c.errIs(ob.MarkOutcomeUnknown(c.ctx, row.OutboxID, "r"), turn.ErrConflict, "unknown outcome of a failed row")
	c.same(c.outboxRecord(row.OutboxID), settled, "the failed row after refused settlements")
}
