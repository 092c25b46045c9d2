package chart

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/steadhq/stead"
)

// tb is what test helpers need from *testing.T, *testing.B and *rapid.T alike.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// sim is a tiny single-threaded runtime for tests: it steps executions, commits them in memory
// the way a store would (version bump, dedupe, timers, outbox, spawns) and delivers what they
// emit in order. It checks every produced execution with CheckExecution and validates every
// bundle as a store would.
type sim struct {
	t         tb
	eng       *Engine
	engines   map[string]*Engine // by definition id: eng and the machines it invokes
	now       time.Time
	exes      map[string]*stead.Execution
	processed map[string]bool // "<exe>\x00<event id>"
	timers    map[string]time.Time
	fired     map[string]bool // timers that fired and whose event is not handled yet
	queue     []stead.Emit
	trail     []byte // every committed execution and bundle, JSON, in order
	steps     int
}

func newSim(t tb, eng *Engine) *sim {
	return &sim{t: t, eng: eng, engines: map[string]*Engine{eng.id: eng}, now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		exes: map[string]*stead.Execution{}, processed: map[string]bool{}, timers: map[string]time.Time{}, fired: map[string]bool{}}
}

// create stores a pending execution and queues its start.
func (s *sim) create(id string, data string) {
	s.exes[id] = &stead.Execution{ID: id, DefinitionID: s.eng.id, Status: stead.StatusPending}
	ev := stead.Event{ID: "start:" + id, Kind: KindStart}
	if data != "" {
		ev.Data = json.RawMessage(data)
	}
	s.queue = append(s.queue, stead.Emit{Target: id, Event: ev})
}

// deliver steps the target with ev, as a worker would, and commits the result.
func (s *sim) deliver(target string, ev stead.Event) error {
	exe, ok := s.exes[target]
	if !ok || s.processed[target+"\x00"+ev.ID] {
		return nil
	}
	if exe.Status == stead.StatusPending && ev.Kind != KindStart && ev.Kind != KindCancel &&
		(ev.Kind != KindTimeout || exe.Timers[RetryTimerPath].IsZero()) {
		return nil // a worker discards events before the start, but for a failed start's retry
	}
	before, _ := json.Marshal(exe)
	eng := s.engines[exe.DefinitionID]
	if eng == nil {
		s.t.Fatalf("sim: no engine for definition %q", exe.DefinitionID)
	}
	out, b, err := eng.Step(exe, ev, s.now)
	if err != nil {
		return err
	}
	if after, _ := json.Marshal(exe); string(before) != string(after) {
		s.t.Fatalf("Step changed its input execution:\n%s\n%s", before, after)
	}
	if err := eng.CheckExecution(out); err != nil {
		s.t.Fatalf("step %d (%s on %s) produced an impossible execution: %v", s.steps, ev.Kind, target, err)
	}
	if err := b.Validate(); err != nil {
		s.t.Fatalf("step %d produced a bundle a store refuses: %v", s.steps, err)
	}
	if b.ProcessedEventID != ev.ID {
		s.t.Fatalf("ProcessedEventID = %q, want %q", b.ProcessedEventID, ev.ID)
	}
	s.steps++
	out = out.Clone()
	out.Version++
	s.exes[target] = out
	s.processed[target+"\x00"+ev.ID] = true
	for _, op := range b.Timers {
		k := target + "\x00" + op.Path
		if op.Action == stead.TimerSchedule {
			s.timers[k] = op.FireAt
		} else {
			delete(s.timers, k)
		}
	}
	// The execution's record of armed timers matches the store's rows, except for timers that
	// fired and whose event has not been handled yet.
	if ev.Kind == KindTimeout {
		delete(s.fired, target+"\x00"+timeoutPath(ev))
	}
	for path, at := range out.Timers {
		k := target + "\x00" + path
		if row, ok := s.timers[k]; !(ok && row.Equal(at)) && !s.fired[k] {
			s.t.Fatalf("execution %s records timer %s at %v, store has %v", target, path, at, row)
		}
	}
	for k, at := range s.timers {
		id, path, _ := strings.Cut(k, "\x00")
		if id == target && !out.Timers[path].Equal(at) {
			s.t.Fatalf("store has timer %s at %v, execution %s records %v", path, at, target, out.Timers)
		}
	}
	for _, sp := range b.Spawns {
		if _, exists := s.exes[sp.ChildID]; exists {
			continue
		}
		def, root := SpawnTarget(out.DefinitionID, sp.RootPath)
		s.exes[sp.ChildID] = &stead.Execution{ID: sp.ChildID, DefinitionID: def, RootPath: root,
			ParentID: target, ChildID: sp.ChildID, Context: sp.Context, Status: stead.StatusPending, Priority: out.Priority}
		s.queue = append(s.queue, stead.Emit{Target: sp.ChildID, Event: stead.Event{ID: "start:" + sp.ChildID, Kind: KindStart}})
	}
	s.queue = append(s.queue, b.Emits...)
	rec, _ := json.Marshal(struct {
		E *stead.Execution
		B stead.Bundle
	}{out, b})
	s.trail = append(append(s.trail, rec...), '\n')
	return nil
}

// drain delivers queued events until none are left.
func (s *sim) drain() {
	for i := 0; len(s.queue) > 0; i++ {
		if i > 10000 {
			s.t.Fatal("sim: events do not settle")
		}
		e := s.queue[0]
		s.queue = s.queue[1:]
		if e.Target == "" {
			continue
		}
		if err := s.deliver(e.Target, e.Event); err != nil {
			s.t.Fatalf("sim: %v", err)
		}
	}
}

// send queues an event for id and drains.
func (s *sim) send(id, kind, data string) {
	ev := stead.Event{ID: fmt.Sprintf("ev%d", s.steps), Kind: kind}
	if data != "" {
		ev.Data = json.RawMessage(data)
	}
	s.queue = append(s.queue, stead.Emit{Target: id, Event: ev})
	s.drain()
}

// advance moves the clock and fires due timers in a stable order, as a sweeper would.
func (s *sim) advance(d time.Duration) {
	s.now = s.now.Add(d)
	var due []string
	for k, at := range s.timers {
		if !at.After(s.now) {
			due = append(due, k)
		}
	}
	slices.Sort(due)
	for _, k := range due {
		id, path, _ := strings.Cut(k, "\x00")
		at := s.timers[k]
		delete(s.timers, k)
		s.fired[k] = true
		s.queue = append(s.queue, stead.Emit{Target: id, Event: TimeoutEvent(id, path, at)})
	}
	s.drain()
}

func emitTo(target, id, kind, data string) stead.Emit {
	ev := stead.Event{ID: id, Kind: kind}
	if data != "" {
		ev.Data = json.RawMessage(data)
	}
	return stead.Emit{Target: target, Event: ev}
}

func timeoutPath(ev stead.Event) string {
	var d timeoutData
	_ = json.Unmarshal(ev.Data, &d)
	return d.Path
}
