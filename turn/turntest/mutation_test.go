package turntest_test

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/memturn"
	"github.com/steadhq/stead/turn/sqliteturn"
	"github.com/steadhq/stead/turn/turntest"
)

// backends returns a fresh backend of each kind the mutants are built on, taken from behind its
// checked Stores: the mutants below wrap it, and turn.NewStores puts the same checks before them
// as before any backend. A mutant of the SQLite backend proves the checks catch the broken rule
// on a real database too, not only against the reference's data structures.
var backends = []struct {
	name string
	new  func(t *testing.T) turn.Backend
}{
	{"memory", func(*testing.T) turn.Backend { return memturn.New().Backend() }},
	{"sqlite", func(t *testing.T) turn.Backend {
		db, err := sqlitedb.Open(t.Context(), sqlitedb.Config{Path: filepath.Join(t.TempDir(), "turns.db")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		s, err := sqliteturn.New(t.Context(), db)
		if err != nil {
			t.Fatal(err)
		}
		return s.Backend()
	}},
}

// The suite is only worth something if it fails broken stores. Each mutant below breaks one rule
// of the contract on top of a correct backend; the checks guarding that rule must fail.

// leakyCards ignores the account when loading a card (a query that forgot the tenant).
type leakyCards struct {
	turn.Backend
	mu    sync.Mutex
	owner map[turn.ID]string
}

func (l *leakyCards) InsertInteraction(ctx context.Context, it turn.Interaction) error {
	l.mu.Lock()
	l.owner[it.ID] = it.AccountID
	l.mu.Unlock()
	return l.Backend.InsertInteraction(ctx, it)
}

func (l *leakyCards) LoadInteraction(ctx context.Context, _ string, id turn.ID) (turn.InteractionRecord, error) {
	l.mu.Lock()
	owner, ok := l.owner[id]
	l.mu.Unlock()
	if !ok {
		return turn.InteractionRecord{}, turn.ErrNotFound
	}
	return l.Backend.LoadInteraction(ctx, owner, id)
}

// deletingErasure implements erasure as a delete: the event disappears from every read.
type deletingErasure struct {
	turn.Backend
	mu      sync.Mutex
	deleted map[turn.ID]turn.CaseKey
}

func (d *deletingErasure) gone(id turn.ID) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.deleted[id]
	return ok
}

func (d *deletingErasure) keep(events []turn.Event) []turn.Event {
	return slices.DeleteFunc(events, func(e turn.Event) bool { return d.gone(e.EventID) })
}

func (d *deletingErasure) RedactPayload(ctx context.Context, account string, id turn.ID, authority string) (turn.Redaction, error) {
	evs, err := d.Backend.LoadEvents(ctx, account, []turn.ID{id})
	if err != nil || len(evs) == 0 || d.gone(id) {
		return turn.Redaction{}, turn.ErrNotFound
	}
	d.mu.Lock()
	d.deleted[id] = evs[0].CaseKey
	d.mu.Unlock()
	return turn.Redaction{RedactedAt: evs[0].OccurredAt, Authority: authority}, nil
}

func (d *deletingErasure) ReadFrom(ctx context.Context, account string, after turn.Cursor, limit int) (turn.EventPage, error) {
	p, err := d.Backend.ReadFrom(ctx, account, after, limit)
	p.Events = d.keep(p.Events)
	return p, err
}

func (d *deletingErasure) ListSince(ctx context.Context, account string, key turn.CaseKey, since turn.Revision, limit int) ([]turn.Event, error) {
	evs, err := d.Backend.ListSince(ctx, account, key, since, limit)
	return d.keep(evs), err
}

func (d *deletingErasure) LoadEvents(ctx context.Context, account string, ids []turn.ID) ([]turn.Event, error) {
	evs, err := d.Backend.LoadEvents(ctx, account, ids)
	return d.keep(evs), err
}

func (d *deletingErasure) CountEvents(ctx context.Context, account string, key turn.CaseKey) (int64, error) {
	n, err := d.Backend.CountEvents(ctx, account, key)
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, k := range d.deleted {
		if k == key {
			n--
		}
	}
	return n, err
}

// looseCommit applies a bundle item by item through the standalone methods, with no
// transaction: whatever ran before a failing item stays.
type looseCommit struct{ turn.Backend }

func (l looseCommit) Commit(ctx context.Context, account string, b turn.Bundle) (turn.Receipt, error) {
	if err := b.Validate(account); err != nil {
		return turn.Receipt{}, err
	}
	r := turn.Receipt{CommittedAt: time.Now()}
	for _, c := range b.JournalCompletions {
		if err := l.CompleteCommand(ctx, account, c.CommandID, c.Outcome); err != nil {
			return r, err
		}
	}
	for _, batch := range b.Events {
		ids, err := l.AppendEvents(ctx, batch)
		if err != nil {
			return r, err
		}
		r.EventIDs = append(r.EventIDs, ids...)
	}
	for _, f := range b.InteractionFinishes {
		if _, err := l.FinishResolution(ctx, account, f.InteractionID, f.Outcome); err != nil {
			return r, err
		}
	}
	for _, inv := range b.InteractionInvalidations {
		ids, err := l.InvalidateForCase(ctx, account, inv.CaseKey, inv.NewRevision, inv.Reason)
		if err != nil {
			return r, err
		}
		r.InvalidatedInteractions = append(r.InvalidatedInteractions, ids...)
	}
	for _, ins := range b.InteractionInserts {
		ids, err := l.InsertReplacingBlocking(ctx, ins.Interaction)
		if err != nil {
			return r, err
		}
		r.InvalidatedInteractions = append(r.InvalidatedInteractions, ids...)
		r.InsertedInteractions = append(r.InsertedInteractions, ins.Interaction.ID)
	}
	for _, e := range b.OutboxEntries {
		if err := l.Enqueue(ctx, e); err != nil {
			return r, err
		}
	}
	if b.ReplayRecord != nil {
		if err := l.PutReplay(ctx, *b.ReplayRecord); err != nil {
			return r, err
		}
	}
	if b.TurnPhase != nil {
		if _, err := l.SetTurnPhase(ctx, account, b.TurnPhase.TurnID, b.TurnPhase.Phase); err != nil {
			return r, err
		}
	}
	return r, nil
}

// greedyClaim hands out rows without marking them claimed: a second worker gets them again.
type greedyClaim struct{ turn.Backend }

func (g greedyClaim) ClaimDue(ctx context.Context, now time.Time, limit int, worker string) ([]turn.OutboxEntry, error) {
	claimed, err := g.Backend.ClaimDue(ctx, now, limit, worker)
	for _, e := range claimed {
		_ = g.Backend.Reschedule(ctx, e.OutboxID, time.Time{}) // back to pending at once
	}
	return claimed, err
}

// oldestConversations lists the oldest limit conversations instead of the newest (a listing that
// forgot to order before it cut).
type oldestConversations struct{ turn.Backend }

func (o oldestConversations) ListConversations(ctx context.Context, account string, limit int) ([]turn.Conversation, error) {
	all, err := o.Backend.ListConversations(ctx, account, math.MaxInt)
	return all[:min(limit, len(all))], err
}

// openTurnCards forgets a turn's settled cards (a listing written on the open-cards index).
type openTurnCards struct{ turn.Backend }

func (o openTurnCards) InteractionsForTurn(ctx context.Context, account string, id turn.ID) ([]turn.InteractionRecord, error) {
	recs, err := o.Backend.InteractionsForTurn(ctx, account, id)
	return slices.DeleteFunc(recs, func(r turn.InteractionRecord) bool { return !r.Interaction.Status.Open() }), err
}

func TestMutantsFail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		stores func(b turn.Backend) turn.Stores
		// mustFail are checks that must catch the mutant; onlyFail, when set, bounds the
		// checks allowed to fail (the mutant breaks nothing else).
		mustFail []string
		onlyFail []string
		detail   string
	}{
		{
			name: "ignores the account on load",
			stores: func(b turn.Backend) turn.Stores {
				return turn.NewStores(&leakyCards{Backend: b, owner: map[turn.ID]string{}})
			},
			mustFail: []string{"cross_tenant_isolation"},
		},
		{
			name: "erasure deletes the event",
			stores: func(b turn.Backend) turn.Stores {
				return turn.NewStores(&deletingErasure{Backend: b, deleted: map[turn.ID]turn.CaseKey{}})
			},
			mustFail: []string{"event_redaction_preserves_identity_and_order", "event_redaction_is_audited_and_idempotent"},
			onlyFail: []string{"event_redaction_preserves_identity_and_order", "event_redaction_is_audited_and_idempotent"},
			detail:   "an erasure must not add, remove or move an event",
		},
		{
			name:     "bundle without a transaction",
			stores:   func(b turn.Backend) turn.Stores { return turn.NewStores(looseCommit{b}) },
			mustFail: []string{"commit_bundle_atomic_on_invalid_item", "commit_bundle_restores_modified_records"},
			onlyFail: []string{"commit_bundle_atomic_on_invalid_item", "commit_bundle_restores_modified_records"},
		},
		{
			name:     "claims are not exclusive",
			stores:   func(b turn.Backend) turn.Stores { return turn.NewStores(greedyClaim{b}) },
			mustFail: []string{"outbox_claim_exclusivity_and_reschedule"},
		},
		{
			name:     "lists the oldest conversations",
			stores:   func(b turn.Backend) turn.Stores { return turn.NewStores(oldestConversations{b}) },
			mustFail: []string{"conversations_listed_newest_last_per_account"},
			onlyFail: []string{"conversations_listed_newest_last_per_account"},
		},
		{
			name:     "a turn's cards leave out the settled ones",
			stores:   func(b turn.Backend) turn.Stores { return turn.NewStores(openTurnCards{b}) },
			mustFail: []string{"interactions_for_turn_whatever_their_status"},
			onlyFail: []string{"interactions_for_turn_whatever_their_status"},
		},
	}
	for _, tt := range tests {
		for _, backend := range backends {
			t.Run(tt.name+"/"+backend.name, func(t *testing.T) {
				t.Parallel()
				report := turntest.RunAll(t.Context(), func(context.Context) (turn.Stores, error) {
					return tt.stores(backend.new(t)), nil
				})
				failed := map[string]string{}
				for _, f := range report.Failures() {
					failed[f.Check] = f.Failure
				}
				for _, name := range tt.mustFail {
					if _, ok := failed[name]; !ok {
						t.Errorf("%s passed against the mutant", name)
					}
				}
				if tt.onlyFail != nil {
					for name, why := range failed {
						if !slices.Contains(tt.onlyFail, name) {
							t.Errorf("%s failed too: %s", name, why)
						}
					}
				}
				if tt.detail != "" && !strings.Contains(failed[tt.mustFail[0]], tt.detail) {
					t.Errorf("%s failed with %q, want it to say %q", tt.mustFail[0], failed[tt.mustFail[0]], tt.detail)
				}
				if report.Passed() || report.Err() == nil {
					t.Error("the report passed")
				}
			})
		}
	}
}

func TestReportForm(t *testing.T) {
	t.Parallel()
	report := turntest.RunAll(t.Context(), func(context.Context) (turn.Stores, error) { return memturn.New(), nil })
	if !report.Passed() || report.Err() != nil || len(report.Outcomes) != turntest.CheckCount {
		t.Fatalf("report:\n%s", report)
	}
	lines := strings.Split(strings.TrimSpace(report.String()), "\n")
	if lines[0] != "27 of 27 conformance checks passed" || len(lines) != 28 || !strings.HasPrefix(lines[1], "pass ") {
		t.Fatalf("report:\n%s", report)
	}
	names := map[string]bool{}
	for _, ch := range turntest.Checks() {
		if names[ch.Name] {
			t.Errorf("duplicate check %s", ch.Name)
		}
		names[ch.Name] = true
		if got, ok := turntest.Lookup(ch.Name); !ok || got.Name != ch.Name {
			t.Errorf("Lookup(%s) failed", ch.Name)
		}
	}
	if len(names) != turntest.CheckCount {
		t.Fatalf("%d checks, want %d", len(names), turntest.CheckCount)
	}
}

// A factory that fails, stores with a missing role, and a store that panics are failures in the
// report, never a panic of the suite.
func TestHarnessNeverPanics(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		factory turntest.Factory
		want    string
	}{
		{"factory error", func(context.Context) (turn.Stores, error) { return turn.Stores{}, context.Canceled }, "factory:"},
		{"missing role", func(context.Context) (turn.Stores, error) {
			s := memturn.New()
			s.Replay = nil
			return s, nil
		}, "replay"},
		{"panicking store", func(context.Context) (turn.Stores, error) {
			s := memturn.New()
			s.Interactions = panicking{s.Interactions}
			return s, nil
		}, "panic"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ch, _ := turntest.Lookup("blocking_interaction_conflict")
			out := ch.Run(t.Context(), tt.factory)
			if out.Passed() || !strings.Contains(out.Failure, tt.want) {
				t.Fatalf("outcome %+v, want a failure mentioning %q", out, tt.want)
			}
		})
	}
}

type panicking struct{ turn.InteractionStore }

func (panicking) InsertInteraction(context.Context, turn.Interaction) error { panic("boom") }
