package turntest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/steadhq/stead/turn"
)

// ExtraChecks returns checks beyond the contract's 27: bad input refused before anything is
// written (zero ids and empty accounts, documents jsonb refuses, unknown enum values, times out
// of range in UTC, cursors no read produced), many concurrent admissions of one idempotency key,
// and exactly-once paging while writers append. They run like the others (Check.Run) and take
// the same factory.
func ExtraChecks() []Check {
	return []Check{
		{"bad_input_is_refused_and_writes_nothing", checkBadInput},
		{"zero_ids_and_empty_accounts_are_invalid", checkZeroIDsAndEmptyAccountsAreInvalid},
		{"json_postgres_refuses_is_invalid", checkJSONPostgresRefusesIsInvalid},
		{"unknown_enum_values_are_invalid", checkUnknownEnumValuesAreInvalid},
		{"times_are_checked_in_utc", checkTimesAreCheckedInUTC},
		{"forged_cursors_are_invalid", checkForgedCursorsAreInvalid},
		{"concurrent_admissions_of_one_key_have_one_fresh", checkConcurrentAdmission},
		{"admissions_stay_unique_under_random_interleavings", checkAdmissionInterleavings},
		{"stream_pages_exactly_once_while_two_accounts_append", func(c *C) { checkConcurrentStream(c, false) }},
		{"stream_pages_exactly_once_while_one_account_appends_concurrently", func(c *C) { checkConcurrentStream(c, true) }},
	}
}

// RunExtra runs ExtraChecks as subtests of t.
func RunExtra(t *testing.T, f Factory, opts ...Option) {
	t.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	for _, ch := range ExtraChecks() {
		t.Run(ch.Name, func(t *testing.T) {
			if o.parallel {
				t.Parallel()
			}
			if out := ch.Run(t.Context(), f); !out.Passed() {
				t.Fatal(out.Failure)
			}
		})
	}
}

// Every kind of bad input is ErrInvalid, and none of it is written.
func checkBadInput(c *C) {
	s := c.s
	big := json.RawMessage(`"` + strings.Repeat("x", turn.MaxPayload) + `"`)
	conv := c.conversation(c.a, c.conv)
	withConv := func(f func(*turn.Conversation)) turn.Conversation { x := conv; f(&x); return x }
	cardWith := func(f func(*turn.Interaction)) turn.Interaction { x := c.card(c.a, caseRef(1), epoch); f(&x); return x }
	entryWith := func(f func(*turn.JournalEntry)) turn.JournalEntry {
		x := c.journalEntry(c.a, c.turnID, turn.NewID(), "bad-input", epoch)
		f(&x)
		return x
	}
	batchWith := func(f func(*turn.EventBatch)) turn.EventBatch {
		x := eventBatch(c.a, turn.NewID(), 1, newIDs(1), epoch)
		f(&x)
		return x
	}
	outboxWith := func(f func(*turn.OutboxEntry)) turn.OutboxEntry {
		x := c.outboxEntry(turn.NewID(), turn.NewID(), "bad-input", epoch)
		f(&x)
		return x
	}
	errOf := func(_ any, err error) error { return err }
	calls := []struct {
		name string
		err  error
	}{
		{"empty account", s.Conversations.CreateConversation(c.ctx, withConv(func(x *turn.Conversation) { x.AccountID = "" }))},
		{"NUL in the account", s.Conversations.CreateConversation(c.ctx, withConv(func(x *turn.Conversation) { x.AccountID = "a\x00b" }))},
		{"invalid UTF-8 account", s.Conversations.CreateConversation(c.ctx, withConv(func(x *turn.Conversation) { x.AccountID = "a\xffb" }))},
		{"oversized account", s.Conversations.CreateConversation(c.ctx, withConv(func(x *turn.Conversation) { x.AccountID = strings.Repeat("a", turn.MaxIDLen+1) }))},
		{"zero conversation id", s.Conversations.CreateConversation(c.ctx, withConv(func(x *turn.Conversation) { x.ID = turn.ID{} }))},
		{"malformed metadata", s.Conversations.CreateConversation(c.ctx, withConv(func(x *turn.Conversation) { x.Metadata = json.RawMessage(`{"a":`) }))},
		{"metadata with \\u0000", s.Conversations.CreateConversation(c.ctx, withConv(func(x *turn.Conversation) { x.Metadata = json.RawMessage(`{"a":"\u0000"}`) }))},
		{"oversized metadata", s.Conversations.CreateConversation(c.ctx, withConv(func(x *turn.Conversation) { x.Metadata = big }))},
		{"NUL in a user turn", s.Conversations.AppendUserTurn(c.ctx, func() turn.UserTurn {
			u := userTurn(c.a, c.conv, c.turnID, epoch)
			u.Input.Text = "a\x00b"
			return u
		}())},
		{"unknown phase", errOf(s.Conversations.SetTurnPhase(c.ctx, c.a, c.turnID, "later"))},
		{"negative conversation limit", errOf(s.Conversations.ListConversations(c.ctx, c.a, -1))},
		{"negative recent-turn limit", errOf(s.Conversations.LoadRecentTurns(c.ctx, c.a, c.conv, -1))},
		{"negative unfinished-turn limit", errOf(s.Conversations.ListUnfinishedTurns(c.ctx, turn.AccountScope(c.a), -1))},
		{"unknown card kind", s.Interactions.InsertInteraction(c.ctx, cardWith(func(x *turn.Interaction) { x.Kind = "riddle" }))},
		{"empty workflow", s.Interactions.InsertInteraction(c.ctx, cardWith(func(x *turn.Interaction) { x.CaseRef.Workflow = "" }))},
		{"negative revision", s.Interactions.InsertInteraction(c.ctx, cardWith(func(x *turn.Interaction) { x.CaseRef.ExpectedRevision = -1 }))},
		{"invalid UTF-8 option label", s.Interactions.InsertInteraction(c.ctx, cardWith(func(x *turn.Interaction) {
			x.Payload.Options = []turn.CardOption{{ID: "ack", Label: "\xc3\x28"}}
		}))},
		{"unknown resolution", errOf(s.Interactions.FinishResolution(c.ctx, c.a, turn.NewID(), turn.ResolutionOutcome{Kind: "maybe"}))},
		{"unknown invalidation", errOf(s.Interactions.InvalidateCaseCards(c.ctx, c.a, caseKey(), turn.InvalidationReason{Kind: "whim"}))},
		{"empty idempotency key", errOf(s.Journal.BeginCommand(c.ctx, entryWith(func(x *turn.JournalEntry) { x.IdempotencyKey = "" })))},
		{"oversized idempotency key", errOf(s.Journal.BeginCommand(c.ctx, entryWith(func(x *turn.JournalEntry) { x.IdempotencyKey = strings.Repeat("k", turn.MaxIDLen+1) })))},
		{"unknown journal status", errOf(s.Journal.BeginCommand(c.ctx, entryWith(func(x *turn.JournalEntry) { x.Status = "sleeping" })))},
		{"unknown outcome", s.Journal.CompleteCommand(c.ctx, c.a, turn.NewID(), turn.JournalOutcome{Kind: "shrug"})},
		{"zero event id", errOf(s.Events.AppendEvents(c.ctx, batchWith(func(x *turn.EventBatch) { x.Events[0].EventID = turn.ID{} })))},
		{"malformed event payload", errOf(s.Events.AppendEvents(c.ctx, batchWith(func(x *turn.EventBatch) { x.Events[0].Payload = json.RawMessage(`[1,`) })))},
		{"NUL in an event type", errOf(s.Events.AppendEvents(c.ctx, batchWith(func(x *turn.EventBatch) { x.Events[0].EventType = "a\x00" })))},
		{"negative cursor", errOf(s.Events.ReadFrom(c.ctx, c.a, -5, 10))},
		{"negative page limit", errOf(s.Events.ReadFrom(c.ctx, c.a, turn.Start, -1))},
		{"negative list-since limit", errOf(s.Events.ListSince(c.ctx, c.a, caseKey(), 0, -1))},
		{"empty redaction authority", errOf(s.Events.RedactPayload(c.ctx, c.a, turn.NewID(), ""))},
		{"empty destination", s.Outbox.Enqueue(c.ctx, outboxWith(func(x *turn.OutboxEntry) { x.Destination = "" }))},
		{"negative attempt count", s.Outbox.Enqueue(c.ctx, outboxWith(func(x *turn.OutboxEntry) { x.AttemptCount = -1 }))},
		{"negative claim limit", errOf(s.Outbox.ClaimDue(c.ctx, epoch, -1, "worker"))},
		{"empty worker id", errOf(s.Outbox.ClaimDue(c.ctx, epoch, 1, ""))},
		{"empty failure reason", s.Outbox.MarkFailed(c.ctx, turn.NewID(), "", time.Time{})},
		{"unknown replay phase", s.Replay.PutReplay(c.ctx, func() turn.ReplayRecord {
			r := turn.ReceivedReplay(c.turnID, c.conv, c.a, epoch)
			r.Phase = "later"
			return r
		}())},
		{"negative replay limit", errOf(s.Replay.ReplaysForConversation(c.ctx, c.a, c.conv, -1))},
		{"bundle for an empty account", errOf(s.Commits.Commit(c.ctx, "", turn.Bundle{}))},
		{"bundle with a malformed payload", errOf(s.Commits.Commit(c.ctx, c.a, turn.Bundle{Events: []turn.EventBatch{
			batchWith(func(x *turn.EventBatch) { x.Events[0].Payload = json.RawMessage(`{`) })}}))},
	}
	for _, call := range calls {
		c.errIs(call.err, turn.ErrInvalid, "%s", call.name)
	}
	_, err := s.Conversations.LoadConversation(c.ctx, c.a, c.conv)
	c.errIs(err, turn.ErrNotFound, "the refused conversations")
	open := val(s.Interactions.ListOpenForCase(c.ctx, c.a, caseKey()))(c, "list open cards")
	c.that(len(open) == 0, "refused cards were written: %d", len(open))
	page := val(s.Events.ReadFrom(c.ctx, c.a, turn.Start, 10))(c, "read the stream")
	c.that(len(page.Events) == 0, "refused events were written: %d", len(page.Events))
	entries := val(s.Journal.CommandsForTurn(c.ctx, c.a, c.turnID))(c, "commands for the turn")
	c.that(len(entries) == 0, "refused commands were written: %d", len(entries))
}

// 32 callers admitting one key at once: exactly one Fresh, and every replay names its command.
func checkConcurrentAdmission(c *C) {
	const callers = 32
	type result struct {
		adm turn.Admission
		cmd turn.ID
		err error
	}
	results := make([]result, callers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range results {
		cmd := turn.NewID()
		results[i].cmd = cmd
		wg.Go(func() {
			<-start
			results[i].adm, results[i].err = c.s.Journal.BeginCommand(c.ctx, c.journalEntry(c.a, c.turnID, cmd, "raced-key", at(i)))
		})
	}
	close(start)
	wg.Wait()
	var fresh []turn.ID
	for i, r := range results {
		c.ok(r.err, "admission %d", i)
		if r.adm.Fresh {
			fresh = append(fresh, r.cmd)
		}
	}
	c.that(len(fresh) == 1, "%d fresh admissions of one key, want exactly 1", len(fresh))
	for i, r := range results {
		c.that(r.adm.Entry.CommandID == fresh[0], "admission %d names command %s, want the fresh one %s", i, r.adm.Entry.CommandID, fresh[0])
	}
	all := val(c.s.Journal.CommandsForTurn(c.ctx, c.a, c.turnID))(c, "commands for turn")
	c.idsEq(commandIDs(all), fresh, "stored commands")
}

// A reader paging by 7 while writers append 120 batches each (sizes cycling 1, 3, 2) sees each
// of its account's events exactly once, in sequence order, and none of another account's. With
// sameAccount, both writers append to the reader's account at once, so commits of adjacent
// sequences race each other.
func checkConcurrentStream(c *C, sameAccount bool) {
	const batches = 120
	sizes := []int{1, 3, 2}
	writerAccounts := []string{c.a, c.b}
	if sameAccount {
		writerAccounts = []string{c.a, c.a}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(writerAccounts))
	written := make([][]turn.ID, len(writerAccounts))
	for w, account := range writerAccounts {
		key := turn.CaseKey{Workflow: workflow, CaseID: fmt.Sprintf("writer-%d", w)}
		wg.Go(func() {
			for i := range batches {
				ids := newIDs(sizes[i%len(sizes)])
				if _, err := c.s.Events.AppendEvents(c.ctx, eventBatchFor(account, key, turn.NewID(), turn.Revision(i+1), ids, at(i))); err != nil {
					errs[w] = err
					return
				}
				written[w] = append(written[w], ids...)
			}
		})
	}
	defer wg.Wait() // a failed read stops the check; the writers still finish before it returns
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	var seen []turn.Event
	cursor := turn.Start
	read := func() int {
		page := val(c.s.Events.ReadFrom(c.ctx, c.a, cursor, 7))(c, "read from %d", cursor)
		seen = append(seen, page.Events...)
		cursor = page.Next
		return len(page.Events)
	}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
			read()
		}
	}
	for read() > 0 { // drain what landed after the last read
	}
	c.ok(errors.Join(errs...), "append")
	want := map[turn.ID]bool{}
	for w, account := range writerAccounts {
		if account == c.a {
			for _, id := range written[w] {
				want[id] = true
			}
		}
	}
	got := map[turn.ID]bool{}
	for i, e := range seen {
		c.that(e.AccountID == c.a, "the reader got an event of account %q", e.AccountID)
		c.that(!got[e.EventID], "event %s delivered twice", e.EventID)
		got[e.EventID] = true
		if i > 0 {
			c.that(e.Sequence > seen[i-1].Sequence, "sequence %d after %d", e.Sequence, seen[i-1].Sequence)
		}
	}
	for id := range want {
		c.that(got[id], "event %s was skipped by the paging reader (%d of %d delivered)", id, len(got), len(want))
	}
	c.that(len(got) == len(want), "%d events delivered, want %d", len(got), len(want))
}

// Eight workers interleave begins, mark-executing and completions at random on four keys: each
// key is admitted fresh exactly once, every replay names that first command, and the only
// refusals are conflicts.
func checkAdmissionInterleavings(c *C) {
	const workers, steps = 8, 40
	keys := []string{"key-0", "key-1", "key-2", "key-3"}
	type admission struct {
		key   string
		cmd   turn.ID
		fresh bool
		named turn.ID
	}
	var mu sync.Mutex
	var admissions []admission
	var begun []turn.ID
	var failures []error
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			for i := range steps {
				mu.Lock()
				var known turn.ID
				if len(begun) > 0 {
					known = begun[rng.IntN(len(begun))]
				}
				mu.Unlock()
				var err error
				switch op := rng.IntN(3); {
				case op == 0 || known.IsZero():
					key := keys[rng.IntN(len(keys))]
					cmd := turn.NewID()
					var adm turn.Admission
					adm, err = c.s.Journal.BeginCommand(c.ctx, c.journalEntry(c.a, c.turnID, cmd, key, at(w*steps+i)))
					if err == nil {
						mu.Lock()
						admissions = append(admissions, admission{key, cmd, adm.Fresh, adm.Entry.CommandID})
						if adm.Fresh {
							begun = append(begun, cmd)
						}
						mu.Unlock()
					}
				case op == 1:
					err = c.s.Journal.MarkExecuting(c.ctx, c.a, known)
				default:
					err = c.s.Journal.CompleteCommand(c.ctx, c.a, known, turn.Committed(1))
				}
				if err != nil && !errors.Is(err, turn.ErrConflict) {
					mu.Lock()
					failures = append(failures, err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	c.ok(errors.Join(failures...), "an interleaved journal call")
	first := map[string]turn.ID{}
	for _, a := range admissions {
		if a.fresh {
			c.that(first[a.key].IsZero(), "key %s admitted fresh twice (%s and %s)", a.key, first[a.key], a.cmd)
			first[a.key] = a.cmd
		}
	}
	for _, a := range admissions {
		c.that(a.named == first[a.key], "a replay of %s names %s, the first command was %s", a.key, a.named, first[a.key])
	}
	for _, e := range val(c.s.Journal.CommandsForTurn(c.ctx, c.a, c.turnID))(c, "commands for turn") {
		c.that(first[e.IdempotencyKey] == e.CommandID, "stored command %s is not the first of key %s", e.CommandID, e.IdempotencyKey)
	}
}
