package memturn_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/memturn"
)

func TestReadOnlyViewHasNoWayBackToWriters(t *testing.T) {
	t.Parallel()
	stores := memturn.New()
	ro := stores.ReadOnly()
	if err := ro.Check(); err != nil {
		t.Fatal(err)
	}
	roles := []struct {
		name   string
		reader any
	}{
		{"conversations", ro.Conversations}, {"interactions", ro.Interactions}, {"journal", ro.Journal},
		{"events", ro.Events}, {"outbox", ro.Outbox}, {"replay", ro.Replay},
	}
	for _, r := range roles {
		switch r.reader.(type) {
		case turn.ConversationWriter, turn.InteractionWriter, turn.JournalWriter, turn.EventWriter,
			turn.OutboxWriter, turn.ReplayWriter, turn.CommitStore, *memturn.Backend:
			t.Errorf("the read-only %s role can be asserted back to a writer", r.name)
		}
	}

	// The view reads what the writers wrote.
	ctx := t.Context()
	c := turn.Conversation{ID: turn.NewID(), AccountID: "acct", CreatedAt: t0}
	if err := stores.Conversations.CreateConversation(ctx, c); err != nil {
		t.Fatal(err)
	}
	got, err := ro.Conversations.LoadConversation(ctx, "acct", c.ID)
	if err != nil || got.ID != c.ID {
		t.Fatalf("read through the view: %+v, %v", got, err)
	}
}

func TestStoresPrintNoImplementation(t *testing.T) {
	t.Parallel()
	stores := memturn.New()
	for _, s := range []string{
		fmt.Sprintf("%v", stores), fmt.Sprintf("%+v", stores), fmt.Sprintf("%#v", stores),
		fmt.Sprintf("%v", stores.ReadOnly()), fmt.Sprintf("%#v", stores.ReadOnly()),
	} {
		if strings.Contains(s, "memturn") || strings.Contains(s, "0x") {
			t.Errorf("printing the stores shows the implementation: %s", s)
		}
	}
}
