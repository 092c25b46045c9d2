package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/steadhq/stead"
)

// Config is what a subtest needs from the store it asks for.
type Config struct {
	// TraceCap is the trace ring cap the store must be created with. 0 means the backend's
	// default; the suite sets it only for the subtests that check the ring.
	TraceCap int
}

// Factory returns a fresh, empty store configured by cfg, and registers with t.Cleanup whatever
// releases it (Close, dropping a schema, removing a file). It is called from parallel subtests,
// so it must be safe for concurrent use. Close may be called twice: one subtest closes the store
// itself before the cleanup runs.
type Factory func(t *testing.T, cfg Config) *stead.Store

// Run runs the whole conformance suite against the stores newStore returns.
func Run(t *testing.T, newStore Factory) {
	t.Helper()
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			for _, r := range g.rules {
				t.Run(r.name, func(t *testing.T) {
					t.Parallel()
					r.run(newHarness(t, newStore, r.cfg))
				})
			}
		})
	}
}

type rule struct {
	name string
	cfg  Config
	run  func(h *harness)
}

type group struct {
	name  string
	rules []rule
}

// groups is the table of every rule, in the order they appear in the test output.
var groups = []group{
	{"commit", commitRules},
	{"dedupe", dedupeRules},
	{"timers", timerRules},
	{"outbox", outboxRules},
	{"spawns", spawnRules},
	{"trace", traceRules},
	{"list", slices.Concat(listRules, filterRules, countRules)},
	{"purge", purgeRules},
	{"purge_tree", purgeTreeRules},
	{"purge_finished", purgeFinishedRules},
	{"batch", batchRules},
	{"times", timeRules},
	{"bad_input", badInputRules},
	{"lifecycle", lifecycleRules},
	{"attributes", attributeRules},
}

// harness is what every rule gets: a fresh store, a context, and an id prefix unique to the
// subtest.
type harness struct {
	*testing.T
	s      *stead.Store
	ctx    context.Context
	prefix string
}

func newHarness(t *testing.T, newStore Factory, cfg Config) *harness {
	s := newStore(t, cfg)
	if s == nil {
		t.Fatal("storetest: the factory returned a nil store")
	}
	h := fnv.New32a()
	h.Write([]byte(t.Name()))
	return &harness{T: t, s: s, ctx: t.Context(), prefix: fmt.Sprintf("st%08x/", h.Sum32())}
}

// id returns the subtest's id for name.
func (h *harness) id(name string) string { return h.prefix + name }

// base is the reference instant of every time-dependent rule. Rules add sub-microsecond digits
// to it where they matter: stores keep microseconds, and the suite must not depend on more.
var base = time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)

// newExe returns a new (version 0) running execution with some of every field set.
func (h *harness) newExe(name string) *stead.Execution {
	return &stead.Execution{
		ID:           h.id(name),
		DefinitionID: h.id("def"),
		Status:       stead.StatusRunning,
		ActivePath:   "main/waiting",
		History:      map[string]string{"main": "main/waiting"},
		Context:      json.RawMessage(`{"count": 1, "name": "ünïcode", "nested": {"b": [1, 2], "a": null}}`),
		Children: map[string]stead.ChildState{
			"region-a": {RootPath: "main/par/a", Finished: true, Outcome: "ok", Result: json.RawMessage(`{"x":1}`), Key: "a"},
		},
		RootPath:  "",
		InvokeSeq: map[string]int{"main/par": 2},
		Priority:  1,
		Deferred: []stead.Event{
			{ID: "deferred-1", Kind: "Later", Data: json.RawMessage(`{"k":"v"}`), CreatedAt: base.Add(1234567 * time.Nanosecond)},
		},
		StartContext: json.RawMessage(`{"count": 0, "name": "ünïcode"}`),
		DeadLetter: &stead.DeadLetter{
			Event:  stead.Event{ID: "failed-1", Kind: "Charge", Data: json.RawMessage(`{"amount": 12.5}`), CreatedAt: base.Add(3 * time.Second)},
			Status: stead.StatusRunning, ActivePath: "main/charging", Context: json.RawMessage(`{"count": 1}`),
			History: map[string]string{"main": "main/charging"},
			Timers:  map[string]time.Time{"main/charging": base.Add(time.Minute + 7*time.Nanosecond)},
		},
		CreatedAt: base.Add(987654321 * time.Nanosecond),
		UpdatedAt: base.Add(2*time.Second + 5*time.Nanosecond),
	}
}

// fullBundle returns a bundle with one of every side effect; tag makes its ids unique.
func (h *harness) fullBundle(exeID, tag string) stead.Bundle {
	return stead.Bundle{
		Emits: []stead.Emit{
			{Target: exeID, Event: stead.Event{ID: tag + "-emit-1", Kind: "Ping", Data: json.RawMessage(`{"n":1}`), CreatedAt: base}},
			{Target: h.id("elsewhere"), Event: stead.Event{ID: tag + "-emit-2", Kind: "Pong"}},
		},
		ProcessedEventID: tag + "-processed",
		Spawns:           []stead.Spawn{{ChildID: exeID + ":" + tag + ":0", RootPath: "main/par/a", Context: json.RawMessage(`{"seed":true}`)}},
		Timers:           []stead.TimerOp{{Action: stead.TimerSchedule, Path: "timer/" + tag, FireAt: base.Add(time.Minute)}},
		Trace:            &stead.TraceStep{EventID: tag + "-processed", EventKind: "Ping", From: "a", To: "b", Actions: []string{"log"}, Context: json.RawMessage(`{"count":2}`), At: base},
	}
}

// commit commits and fails the test on error. Like any caller that goes on with the same value,
// it then sets exe.Version to the version the commit returned; the store itself must not have
// touched exe.
func (h *harness) commit(exe *stead.Execution, b stead.Bundle) []int64 {
	h.Helper()
	before := exe.Clone()
	c, err := h.s.Commit(h.ctx, exe, b)
	if err != nil {
		h.Fatalf("Commit(%s at version %d): %v", exe.ID, exe.Version, err)
	}
	if !reflect.DeepEqual(exe, before) {
		h.Fatalf("Commit(%s) changed the execution it was given", exe.ID)
	}
	// One version per event the commit applies.
	if want := exe.Version + 1 + int64(len(b.AlsoProcessed)); c.Version != want {
		h.Fatalf("Commit(%s at version %d, %d further events) returned version %d, want %d",
			exe.ID, exe.Version, len(b.AlsoProcessed), c.Version, want)
	}
	if len(c.Seqs) != len(b.Emits) || (len(b.Emits) == 0 && c.Seqs != nil) {
		h.Fatalf("Commit(%s) returned seqs %v for %d emits", exe.ID, c.Seqs, len(b.Emits))
	}
	exe.Version = c.Version
	return c.Seqs
}

func (h *harness) load(id string) *stead.Execution {
	h.Helper()
	e, err := h.s.Load(h.ctx, id)
	if err != nil {
		h.Fatalf("Load(%s): %v", id, err)
	}
	return e
}

func (h *harness) mustNotExist(id string) {
	h.Helper()
	e, err := h.s.Load(h.ctx, id)
	if !errors.Is(err, stead.ErrNotFound) {
		h.Fatalf("Load(%s) = %v, %v; want ErrNotFound", id, e, err)
	}
}

func (h *harness) processed(id, event string) bool {
	h.Helper()
	ok, err := h.s.IsProcessed(h.ctx, id, event)
	if err != nil {
		h.Fatalf("IsProcessed(%s, %s): %v", id, event, err)
	}
	return ok
}

func (h *harness) trace(id string) []stead.TraceStep {
	h.Helper()
	tr, err := h.s.ReadTrace(h.ctx, id)
	if err != nil {
		h.Fatalf("ReadTrace(%s): %v", id, err)
	}
	return tr
}

func (h *harness) timers(id string) []stead.Timer {
	h.Helper()
	ts, err := h.s.Timers(h.ctx, id)
	if err != nil {
		h.Fatalf("Timers(%s): %v", id, err)
	}
	return ts
}

func (h *harness) outbox(source string) []stead.OutboxEntry {
	h.Helper()
	es, err := h.s.PendingOutbox(h.ctx, source, stead.MaxListLimit)
	if err != nil {
		h.Fatalf("PendingOutbox(%q): %v", source, err)
	}
	return es
}

func (h *harness) spawns(parent string) []stead.SpawnEntry {
	h.Helper()
	es, err := h.s.PendingSpawns(h.ctx, parent, stead.MaxListLimit)
	if err != nil {
		h.Fatalf("PendingSpawns(%q): %v", parent, err)
	}
	return es
}

func (h *harness) due(now time.Time, limit int) []stead.Timer {
	h.Helper()
	ts, err := h.s.DueTimers(h.ctx, now, limit)
	if err != nil {
		h.Fatalf("DueTimers(%v, %d): %v", now, limit, err)
	}
	return ts
}

// wantErr fails unless err matches target.
func (h *harness) wantErr(what string, err, target error) {
	h.Helper()
	if !errors.Is(err, target) {
		h.Fatalf("%s: error %v, want one matching %v", what, err, target)
	}
}

// wantConflict fails unless err is a *stead.ConflictError for id at version expected whose Found
// is one of found (-1 always allowed when unknownOK).
func (h *harness) wantConflict(what string, err error, id string, expected int64, found ...int64) {
	h.Helper()
	h.wantErr(what, err, stead.ErrConflict)
	var ce *stead.ConflictError
	if !errors.As(err, &ce) {
		h.Fatalf("%s: error %v (%T) matches ErrConflict but is not a *stead.ConflictError", what, err, err)
	}
	if ce.ID != id || ce.Expected != expected {
		h.Fatalf("%s: ConflictError{ID: %q, Expected: %d}, want {%q, %d}", what, ce.ID, ce.Expected, id, expected)
	}
	if !slices.Contains(found, ce.Found) {
		h.Fatalf("%s: ConflictError.Found = %d, want one of %v", what, ce.Found, found)
	}
}

// ---- normalisation: what "equal" means across backends ----

// normTime keeps what every store keeps: microseconds, in UTC.
func normTime(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC().Truncate(time.Microsecond)
}

// canonJSON re-encodes a JSON document with sorted keys and no insignificant whitespace, so that
// documents that mean the same compare equal.
func canonJSON(raw []byte) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return json.RawMessage("INVALID:" + string(raw))
	}
	out, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("INVALID:" + string(raw))
	}
	return out
}

func normEvent(ev stead.Event) stead.Event {
	ev.Data = canonJSON(ev.Data)
	ev.CreatedAt = normTime(ev.CreatedAt)
	return ev
}

func normExe(e *stead.Execution) *stead.Execution {
	if e == nil {
		return nil
	}
	c := e.Clone()
	c.Context = canonJSON(c.Context)
	if len(c.History) == 0 {
		c.History = nil
	}
	if len(c.InvokeSeq) == 0 {
		c.InvokeSeq = nil
	}
	if len(c.Children) == 0 {
		c.Children = nil
	}
	for k, ch := range c.Children {
		ch.Result = canonJSON(ch.Result)
		c.Children[k] = ch
	}
	if len(c.Deferred) == 0 {
		c.Deferred = nil
	}
	for i := range c.Deferred {
		c.Deferred[i] = normEvent(c.Deferred[i])
	}
	c.CreatedAt, c.UpdatedAt, c.FinishedAt = normTime(c.CreatedAt), normTime(c.UpdatedAt), normTime(c.FinishedAt)
	c.StartContext = canonJSON(c.StartContext)
	if d := c.DeadLetter; d != nil {
		d.Event = normEvent(d.Event)
		d.Context = canonJSON(d.Context)
		if len(d.History) == 0 {
			d.History = nil
		}
		if len(d.Timers) == 0 {
			d.Timers = nil
		}
		for k, at := range d.Timers {
			d.Timers[k] = normTime(at)
		}
	}
	return c
}

func normSummary(s stead.Summary) stead.Summary {
	s.CreatedAt, s.UpdatedAt, s.FinishedAt = normTime(s.CreatedAt), normTime(s.UpdatedAt), normTime(s.FinishedAt)
	return s
}

func normStep(st stead.TraceStep) stead.TraceStep {
	st.Context = canonJSON(st.Context)
	st.At = normTime(st.At)
	if len(st.Actions) == 0 {
		st.Actions = nil
	}
	return st
}

func normOutbox(e stead.OutboxEntry) stead.OutboxEntry {
	e.Event = normEvent(e.Event)
	return e
}

func normSpawn(e stead.SpawnEntry) stead.SpawnEntry {
	e.Context = canonJSON(e.Context)
	return e
}

func normTimer(t stead.Timer) stead.Timer {
	t.FireAt = normTime(t.FireAt)
	return t
}

func mapSlice[T any](in []T, f func(T) T) []T {
	out := make([]T, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}

// sameExe fails unless got equals want once both are normalised.
func (h *harness) sameExe(what string, got, want *stead.Execution) {
	h.Helper()
	g, w := normExe(got), normExe(want)
	if !reflect.DeepEqual(g, w) {
		h.Fatalf("%s: execution differs\n got: %s\nwant: %s", what, dump(g), dump(w))
	}
}

func dump(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}

// ---- snapshots: "nothing was written" ----

// snapshot is everything the store shows about a set of executions and events, plus its global
// queues, normalised.
type snapshot struct {
	Exes      map[string]*stead.Execution
	Processed map[string]bool
	Trace     map[string][]stead.TraceStep
	Timers    map[string][]stead.Timer
	Outbox    []stead.OutboxEntry
	Spawns    []stead.SpawnEntry
	Due       []stead.Timer
}

// farFuture is late enough for every timer the suite arms to be due.
var farFuture = base.Add(100 * 365 * 24 * time.Hour)

// snap reads the snapshot of ids and of the (execution, event) pairs in refs.
func (h *harness) snap(ids []string, refs ...stead.EventRef) snapshot {
	h.Helper()
	sn := snapshot{
		Exes: map[string]*stead.Execution{}, Processed: map[string]bool{},
		Trace: map[string][]stead.TraceStep{}, Timers: map[string][]stead.Timer{},
	}
	for _, id := range ids {
		e, err := h.s.Load(h.ctx, id)
		switch {
		case errors.Is(err, stead.ErrNotFound):
			sn.Exes[id] = nil
		case err != nil:
			h.Fatalf("Load(%s): %v", id, err)
		default:
			sn.Exes[id] = normExe(e)
		}
		sn.Trace[id] = mapSlice(h.trace(id), normStep)
		sn.Timers[id] = mapSlice(h.timers(id), normTimer)
	}
	for _, r := range refs {
		sn.Processed[r.ExecutionID+" "+r.EventID] = h.processed(r.ExecutionID, r.EventID)
	}
	sn.Outbox = mapSlice(h.outbox(""), normOutbox)
	sn.Spawns = mapSlice(h.spawns(""), normSpawn)
	sn.Due = mapSlice(h.due(farFuture, stead.MaxListLimit), normTimer)
	return sn
}

// unchanged fails unless the store still shows the snapshot before.
func (h *harness) unchanged(what string, before snapshot, ids []string, refs ...stead.EventRef) {
	h.Helper()
	after := h.snap(ids, refs...)
	if !reflect.DeepEqual(before, after) {
		h.Fatalf("%s changed the store\nbefore: %s\n after: %s", what, dump(before), dump(after))
	}
}

// seqsOf returns the sequence numbers of entries.
func seqsOf(es []stead.OutboxEntry) []int64 {
	out := make([]int64, len(es))
	for i, e := range es {
		out[i] = e.Seq
	}
	return out
}

func spawnSeqs(es []stead.SpawnEntry) []int64 {
	out := make([]int64, len(es))
	for i, e := range es {
		out[i] = e.Seq
	}
	return out
}

// increasing reports whether seqs is strictly increasing.
func increasing(seqs []int64) bool {
	for i := 1; i < len(seqs); i++ {
		if seqs[i] <= seqs[i-1] {
			return false
		}
	}
	return true
}

// bigJSON returns a JSON string document of exactly n bytes.
func bigJSON(n int) json.RawMessage {
	return json.RawMessage(`"` + strings.Repeat("a", n-2) + `"`)
}

// bigObject returns a JSON object of exactly n bytes.
func bigObject(n int) json.RawMessage {
	return json.RawMessage(`{"k":"` + strings.Repeat("a", n-8) + `"}`)
}
