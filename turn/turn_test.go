package turn_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/turn"
)

func TestIDRoundTrip(t *testing.T) {
	for range 100 {
		id := turn.NewID()
		if id.IsZero() {
			t.Fatal("NewID returned the zero id")
		}
		if id[6]>>4 != 7 || id[8]>>6 != 2 {
			t.Fatalf("%s is not a version-7 RFC 9562 UUID", id)
		}
		back, err := turn.ParseID(strings.ToUpper(id.String()))
		if err != nil || back != id {
			t.Fatalf("ParseID(%s) = %s, %v", id, back, err)
		}
		raw, err := json.Marshal(id)
		if err != nil {
			t.Fatal(err)
		}
		var dec turn.ID
		if err := json.Unmarshal(raw, &dec); err != nil || dec != id {
			t.Fatalf("JSON round trip of %s gave %s, %v", id, dec, err)
		}
	}
}

func TestParseIDRefusesMalformed(t *testing.T) {
	for _, s := range []string{"", "x", "0190a4e2-7b1c-7c3e-8f00-00000000000", "0190a4e2x7b1c-7c3e-8f00-000000000000",
		"0190a4e2-7b1c-7c3e-8f00-00000000000g", "0190a4e2-7b1c-7c3e-8f00-0000000000000"} {
		if _, err := turn.ParseID(s); !errors.Is(err, turn.ErrInvalid) {
			t.Errorf("ParseID(%q) = %v, want ErrInvalid", s, err)
		}
	}
}

func TestScan(t *testing.T) {
	id := turn.NewID()
	for _, src := range []any{id.String(), []byte(id.String()), id[:], [16]byte(id)} {
		var got turn.ID
		if err := got.Scan(src); err != nil || got != id {
			t.Errorf("Scan(%T) = %s, %v", src, got, err)
		}
	}
	var got turn.ID
	if err := got.Scan(42); err == nil {
		t.Error("Scan(int) succeeded")
	}
}

func TestSentinelsAreSteads(t *testing.T) {
	pairs := []struct{ a, b error }{
		{turn.ErrNotFound, stead.ErrNotFound}, {turn.ErrConflict, stead.ErrConflict},
		{turn.ErrUnavailable, stead.ErrUnavailable}, {turn.ErrTimeout, stead.ErrTimeout},
		{turn.ErrInvalid, stead.ErrInvalid},
	}
	for _, p := range pairs {
		if p.a != p.b {
			t.Errorf("%v is not the stead sentinel", p.a)
		}
	}
}

func TestCodedErrors(t *testing.T) {
	tests := []struct {
		err  error
		code string
	}{
		{turn.InvalidRecord("x"), turn.CodeInvalidRecord},
		{turn.IdentityMismatch("x"), turn.CodeIdentityMismatch},
		{turn.BundleAccountMismatch("x"), turn.CodeBundleAccountMismatch},
	}
	for _, tt := range tests {
		wrapped := errors.Join(errors.New("context"), tt.err)
		if !turn.HasCode(wrapped, tt.code) || !errors.Is(wrapped, turn.ErrInvalid) {
			t.Errorf("%v: HasCode %v, Is(ErrInvalid) %v", tt.err, turn.HasCode(wrapped, tt.code), errors.Is(wrapped, turn.ErrInvalid))
		}
		if turn.HasCode(wrapped, "other") || errors.Is(wrapped, turn.ErrConflict) {
			t.Errorf("%v matches what it should not", tt.err)
		}
		if !strings.Contains(tt.err.Error(), tt.code) {
			t.Errorf("%q does not name its code", tt.err)
		}
	}
}

func TestInteractionTransitions(t *testing.T) {
	all := []turn.InteractionStatus{turn.InteractionActive, turn.InteractionResolving, turn.InteractionResolved,
		turn.InteractionDeclined, turn.InteractionDismissed, turn.InteractionInvalidated, turn.InteractionExpired,
		turn.InteractionFailed}
	for _, from := range all {
		for _, to := range all {
			want := false
			switch from {
			case turn.InteractionActive:
				want = to != turn.InteractionActive
			case turn.InteractionResolving:
				want = to == turn.InteractionResolved || to == turn.InteractionFailed || to == turn.InteractionActive
			}
			if got := from.CanTransitionTo(to); got != want {
				t.Errorf("%s -> %s: %v, want %v", from, to, got, want)
			}
		}
		if from.Open() == from.Terminal() {
			t.Errorf("%s is both or neither open and terminal", from)
		}
	}
}

func TestJournalTransitions(t *testing.T) {
	legal := map[[2]turn.JournalStatus]bool{}
	for _, p := range [][2]turn.JournalStatus{
		{turn.JournalPending, turn.JournalExecuting}, {turn.JournalAwaitingConfirmation, turn.JournalExecuting},
		{turn.JournalPending, turn.JournalCommitted}, {turn.JournalPending, turn.JournalFailed}, {turn.JournalPending, turn.JournalOutcomeUnknown},
		{turn.JournalAwaitingConfirmation, turn.JournalCommitted}, {turn.JournalAwaitingConfirmation, turn.JournalFailed}, {turn.JournalAwaitingConfirmation, turn.JournalOutcomeUnknown},
		{turn.JournalExecuting, turn.JournalCommitted}, {turn.JournalExecuting, turn.JournalFailed}, {turn.JournalExecuting, turn.JournalOutcomeUnknown},
		{turn.JournalOutcomeUnknown, turn.JournalCommitted}, {turn.JournalOutcomeUnknown, turn.JournalFailed},
	} {
		legal[p] = true
	}
	all := []turn.JournalStatus{turn.JournalPending, turn.JournalAwaitingConfirmation, turn.JournalExecuting,
		turn.JournalCommitted, turn.JournalFailed, turn.JournalOutcomeUnknown}
	for _, from := range all {
		for _, to := range all {
			if got := from.CanTransitionTo(to); got != legal[[2]turn.JournalStatus{from, to}] {
				t.Errorf("%s -> %s: %v", from, to, got)
			}
		}
	}
	if got := turn.JournalExecuting.Sources(); len(got) != 2 {
		t.Errorf("sources of executing: %v", got)
	}
	if turn.JournalAwaitingConfirmation.Resumable() {
		t.Error("awaiting confirmation must not be resumable")
	}
}

func TestOutboxTransitions(t *testing.T) {
	tests := []struct {
		from, to turn.OutboxStatus
		want     bool
	}{
		{turn.OutboxPending, turn.OutboxDispatching, true},
		{turn.OutboxPending, turn.OutboxPending, true},
		{turn.OutboxPending, turn.OutboxCompleted, false},
		{turn.OutboxDispatching, turn.OutboxCompleted, true},
		{turn.OutboxDispatching, turn.OutboxDispatching, false},
		{turn.OutboxOutcomeUnknown, turn.OutboxPending, true},
		{turn.OutboxOutcomeUnknown, turn.OutboxDispatching, false},
		{turn.OutboxCompleted, turn.OutboxPending, false},
		{turn.OutboxFailed, turn.OutboxFailed, false},
	}
	for _, tt := range tests {
		if got := tt.from.CanTransitionTo(tt.to); got != tt.want {
			t.Errorf("%s -> %s: %v, want %v", tt.from, tt.to, got, tt.want)
		}
	}
}

func TestSameJSON(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{`{"a":1,"b":[1,2]}`, `{ "b": [1, 2], "a": 1 }`, true},
		{``, `null`, true},
		{`{"a":1}`, `{"a":2}`, false},
		{`[1,2]`, `[2,1]`, false},
	}
	for _, tt := range tests {
		if got := turn.SameJSON(json.RawMessage(tt.a), json.RawMessage(tt.b)); got != tt.want {
			t.Errorf("SameJSON(%s, %s) = %v", tt.a, tt.b, got)
		}
	}
}

func TestHashPayloadIgnoresKeyOrder(t *testing.T) {
	a := turn.CardPayload{Title: "t", Metadata: json.RawMessage(`{"x":1,"y":2}`)}
	b := turn.CardPayload{Title: "t", Metadata: json.RawMessage(`{"y":2, "x":1}`)}
	if turn.HashPayload(a) != turn.HashPayload(b) {
		t.Error("hash depends on key order")
	}
	b.Title = "u"
	if turn.HashPayload(a) == turn.HashPayload(b) {
		t.Error("hash ignores the title")
	}
}

func validBundle(account string) turn.Bundle {
	at := time.Unix(0, 0).UTC()
	conv, tid := turn.NewID(), turn.NewID()
	card := turn.Interaction{ID: turn.NewID(), AccountID: account, ConversationID: conv,
		CaseRef: turn.CaseRef{Workflow: "w", CaseID: "c", ExpectedRevision: 1}, CreatedByTurn: tid,
		Kind: turn.KindSingleSelect, Blocking: true, Status: turn.InteractionActive, CreatedAt: at}
	replay := turn.ReceivedReplay(tid, conv, account, at)
	return turn.Bundle{
		JournalCompletions: []turn.JournalCompletion{{CommandID: turn.NewID(), Outcome: turn.Committed(2)}},
		Events: []turn.EventBatch{{AccountID: account, CaseKey: card.CaseRef.Key(), CommandID: turn.NewID(), Revision: 2,
			Events: []turn.NewEvent{{EventID: turn.NewID(), EventType: "t", OccurredAt: at, Payload: json.RawMessage(`{}`)}}}},
		InteractionInserts: []turn.InteractionInsert{{Interaction: card}},
		ReplayRecord:       &replay,
		TurnPhase:          &turn.PhaseUpdate{TurnID: tid, Phase: turn.PhaseCommitted},
	}
}

func TestBundleValidate(t *testing.T) {
	const a = "acct"
	tests := []struct {
		name   string
		mutate func(*turn.Bundle)
		code   string // "" with invalid: plain ErrInvalid
		ok     bool
	}{
		{"valid", func(*turn.Bundle) {}, "", true},
		{"foreign batch", func(b *turn.Bundle) { b.Events[0].AccountID = "other" }, turn.CodeBundleAccountMismatch, false},
		{"foreign batch before empty", func(b *turn.Bundle) {
			b.Events = append(b.Events, turn.EventBatch{AccountID: "other"})
			b.Events[0].Events = nil
		}, turn.CodeInvalidRecord, false},
		{"empty batch", func(b *turn.Bundle) { b.Events[0].Events = nil }, turn.CodeInvalidRecord, false},
		{"foreign insert", func(b *turn.Bundle) { b.InteractionInserts[0].Interaction.AccountID = "other" }, turn.CodeBundleAccountMismatch, false},
		{"foreign replay", func(b *turn.Bundle) { b.ReplayRecord.AccountID = "other" }, turn.CodeBundleAccountMismatch, false},
		{"zero event id", func(b *turn.Bundle) { b.Events[0].Events[0].EventID = turn.ID{} }, "", false},
		{"bad payload", func(b *turn.Bundle) { b.Events[0].Events[0].Payload = json.RawMessage(`{`) }, "", false},
		{"NUL in type", func(b *turn.Bundle) { b.Events[0].Events[0].EventType = "a\x00b" }, "", false},
		{"negative revision", func(b *turn.Bundle) { b.Events[0].Revision = -1 }, turn.CodeInvalidRecord, false},
		{"unknown phase", func(b *turn.Bundle) { b.TurnPhase.Phase = "later" }, "", false},
		{"unknown outcome", func(b *turn.Bundle) { b.JournalCompletions[0].Outcome.Kind = "maybe" }, "", false},
		{"bad utf8 outbox key", func(b *turn.Bundle) {
			b.OutboxEntries = []turn.OutboxEntry{{OutboxID: turn.NewID(), CommandID: turn.NewID(), Destination: "d",
				IdempotencyKey: "\xff", Status: turn.OutboxPending, CreatedAt: time.Unix(0, 0)}}
		}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := validBundle(a)
			tt.mutate(&b)
			err := b.Validate(a)
			if tt.ok {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if !errors.Is(err, turn.ErrInvalid) {
				t.Fatalf("Validate = %v, want ErrInvalid", err)
			}
			if tt.code != "" && !turn.HasCode(err, tt.code) {
				t.Fatalf("Validate = %v, want code %s", err, tt.code)
			}
		})
	}
	b := validBundle(a)
	if err := b.Validate(""); !errors.Is(err, turn.ErrInvalid) {
		t.Errorf("empty account: %v", err)
	}
	if b.IsEmpty() || !(&turn.Bundle{}).IsEmpty() {
		t.Error("IsEmpty is wrong")
	}
}

func TestStoresCheckAndString(t *testing.T) {
	var s turn.Stores
	var missing *turn.MissingStoreError
	if err := s.Check(); !errors.As(err, &missing) || missing.Role != "conversations" || !errors.Is(err, turn.ErrInvalid) {
		t.Fatalf("Check = %v", err)
	}
	if got := s.ReadOnly().Check(); !errors.As(got, &missing) || missing.Role != "conversations" {
		t.Fatalf("ReadOnly().Check = %v", got)
	}
	if strings.Contains(s.String(), "nil") {
		t.Errorf("String = %q", s.String())
	}
}

func TestOutcomeFromError(t *testing.T) {
	cmd := turn.NewID()
	tests := []struct {
		err  error
		want turn.JournalOutcome
	}{
		{&turn.RevisionConflictError{Current: 4}, turn.JournalOutcome{Kind: turn.OutcomeRevisionConflict, CurrentRevision: 4}},
		{&turn.OutcomeUnknownError{AttemptID: "a", Reason: "r"}, turn.JournalOutcome{Kind: turn.OutcomeUnknown, AttemptID: "a", Reason: "r"}},
		{errors.Join(errors.New("x"), turn.ErrConflict), turn.Failed("store.conflict")},
		{turn.InvalidRecord("x"), turn.Failed("store." + turn.CodeInvalidRecord)},
		{errors.New("boom"), turn.Failed("other")},
	}
	for _, tt := range tests {
		if got := turn.OutcomeFromError(cmd, tt.err); !got.Equal(tt.want) {
			t.Errorf("OutcomeFromError(%v) = %+v, want %+v", tt.err, got, tt.want)
		}
	}
}
