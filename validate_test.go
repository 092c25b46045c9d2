package stead_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/steadhq/stead"
)

func validExecution() *stead.Execution {
	return &stead.Execution{ID: "order-1", DefinitionID: "order", Status: stead.StatusRunning, Context: json.RawMessage(`{"amount":10}`)}
}

func TestExecutionValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(e *stead.Execution)
	}{
		{"empty id", func(e *stead.Execution) { e.ID = "" }},
		{"nul in id", func(e *stead.Execution) { e.ID = "a\x00" }},
		{"invalid utf8 id", func(e *stead.Execution) { e.ID = "\xc3\x28" }},
		{"empty definition", func(e *stead.Execution) { e.DefinitionID = "" }},
		{"unknown status", func(e *stead.Execution) { e.Status = "zombie" }},
		{"no status", func(e *stead.Execution) { e.Status = "" }},
		{"negative version", func(e *stead.Execution) { e.Version = -1 }},
		{"priority too high", func(e *stead.Execution) { e.Priority = stead.MaxPriority + 1 }},
		{"context not object", func(e *stead.Execution) { e.Context = json.RawMessage(`[1]`) }},
		{"context broken", func(e *stead.Execution) { e.Context = json.RawMessage(`{`) }},
		{"context oversized", func(e *stead.Execution) {
			e.Context = json.RawMessage(`{"a":"` + strings.Repeat("x", stead.MaxPayload) + `"}`)
		}},
		{"nul in outcome", func(e *stead.Execution) { e.Outcome = "\x00" }},
		{"nul in error", func(e *stead.Execution) { e.Error = "boom\x00" }},
		{"empty history key", func(e *stead.Execution) { e.History = map[string]string{"": "a"} }},
		{"bad child result", func(e *stead.Execution) {
			e.Children = map[string]stead.ChildState{"c": {Result: json.RawMessage("{")}}
		}},
		{"timer without fire time", func(e *stead.Execution) { e.Timers = map[string]time.Time{"s": {}} }},
		{"timer with empty path", func(e *stead.Execution) { e.Timers = map[string]time.Time{"": time.Unix(1, 0)} }},
		{"timer trace not ascii", func(e *stead.Execution) { e.TimerTraces = map[string]string{"s": "00-é"} }},
		{"timer trace with empty path", func(e *stead.Execution) { e.TimerTraces = map[string]string{"": "00-a"} }},
		{"bad deferred event", func(e *stead.Execution) { e.Deferred = []stead.Event{{ID: "", Kind: "k"}} }},
		{"start context not object", func(e *stead.Execution) { e.StartContext = json.RawMessage(`"s"`) }},
		{"dead letter without event id", func(e *stead.Execution) {
			e.DeadLetter = &stead.DeadLetter{Event: stead.Event{Kind: "k"}, Status: stead.StatusRunning}
		}},
		{"dead letter with unknown status", func(e *stead.Execution) {
			e.DeadLetter = &stead.DeadLetter{Event: stead.Event{ID: "e", Kind: "k"}, Status: "zombie"}
		}},
		{"dead letter context not object", func(e *stead.Execution) {
			e.DeadLetter = &stead.DeadLetter{Event: stead.Event{ID: "e", Kind: "k"}, Status: stead.StatusRunning, Context: json.RawMessage(`[]`)}
		}},
		{"dead letter nul in path", func(e *stead.Execution) {
			e.DeadLetter = &stead.DeadLetter{Event: stead.Event{ID: "e", Kind: "k"}, Status: stead.StatusRunning, ActivePath: "a\x00"}
		}},
		{"dead letter timer without fire time", func(e *stead.Execution) {
			e.DeadLetter = &stead.DeadLetter{Event: stead.Event{ID: "e", Kind: "k"}, Status: stead.StatusRunning, Timers: map[string]time.Time{"s": {}}}
		}},
		{"dead letter empty history key", func(e *stead.Execution) {
			e.DeadLetter = &stead.DeadLetter{Event: stead.Event{ID: "e", Kind: "k"}, Status: stead.StatusRunning, History: map[string]string{"": "x"}}
		}},
	}
	if err := validExecution().Validate(); err != nil {
		t.Fatalf("valid execution refused: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := validExecution()
			tt.mutate(e)
			if err := e.Validate(); !errors.Is(err, stead.ErrInvalid) {
				t.Fatalf("Validate = %v, want ErrInvalid", err)
			}
			if _, err := stead.EncodeExecution(e); !errors.Is(err, stead.ErrInvalid) {
				t.Fatalf("EncodeExecution = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestBundleValidate(t *testing.T) {
	ev := stead.Event{ID: "e1", Kind: "paid"}
	tests := []struct {
		name string
		b    stead.Bundle
		ok   bool
	}{
		{"empty", stead.Bundle{}, true},
		{"full", stead.Bundle{
			Emits:            []stead.Emit{{Target: "t", Event: ev}, {Event: ev}},
			ProcessedEventID: "e0",
			Spawns:           []stead.Spawn{{ChildID: "c", RootPath: "a.b", Context: json.RawMessage(`{}`)}},
			Timers:           []stead.TimerOp{{Action: stead.TimerSchedule, Path: "a", FireAt: time.Now()}, {Action: stead.TimerCancel, Path: "b"}},
			Trace:            &stead.TraceStep{EventKind: "paid", Actions: []string{"ship"}},
		}, true},
		{"emit without event id", stead.Bundle{Emits: []stead.Emit{{Event: stead.Event{Kind: "k"}}}}, false},
		{"emit without kind", stead.Bundle{Emits: []stead.Emit{{Event: stead.Event{ID: "x"}}}}, false},
		{"emit bad data", stead.Bundle{Emits: []stead.Emit{{Event: stead.Event{ID: "x", Kind: "k", Data: json.RawMessage("nope")}}}}, false},
		{"emit with trace", stead.Bundle{Emits: []stead.Emit{{Target: "t", Event: stead.Event{ID: "x", Kind: "k",
			Trace: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01;congo=t61rcWkgMzE"}}}}, true},
		{"emit trace too long", stead.Bundle{Emits: []stead.Emit{{Event: stead.Event{ID: "x", Kind: "k", Trace: strings.Repeat("a", stead.MaxTraceLen+1)}}}}, false},
		{"emit trace not ascii", stead.Bundle{Emits: []stead.Emit{{Event: stead.Event{ID: "x", Kind: "k", Trace: "00-é"}}}}, false},
		{"emit trace control byte", stead.Bundle{Emits: []stead.Emit{{Event: stead.Event{ID: "x", Kind: "k", Trace: "00\n"}}}}, false},
		{"emit nul target", stead.Bundle{Emits: []stead.Emit{{Target: "\x00", Event: ev}}}, false},
		{"processed id invalid utf8", stead.Bundle{ProcessedEventID: "\xff"}, false},
		{"spawn without child", stead.Bundle{Spawns: []stead.Spawn{{RootPath: "r"}}}, false},
		{"spawn context array", stead.Bundle{Spawns: []stead.Spawn{{ChildID: "c", Context: json.RawMessage(`[]`)}}}, false},
		{"schedule without time", stead.Bundle{Timers: []stead.TimerOp{{Action: stead.TimerSchedule, Path: "a"}}}, false},
		{"timer without path", stead.Bundle{Timers: []stead.TimerOp{{Action: stead.TimerCancel}}}, false},
		{"unknown timer action", stead.Bundle{Timers: []stead.TimerOp{{Action: "snooze", Path: "a"}}}, false},
		{"trace nul action", stead.Bundle{Trace: &stead.TraceStep{Actions: []string{"a\x00"}}}, false},
		{"also processed", stead.Bundle{ProcessedEventID: "e0", AlsoProcessed: []string{"e1", "e2"}}, true},
		{"also processed empty slice", stead.Bundle{AlsoProcessed: []string{}}, true},
		{"also processed MaxBatch", stead.Bundle{ProcessedEventID: "e", AlsoProcessed: eventIDs(stead.MaxBatch)}, true},
		{"also processed without processed id", stead.Bundle{AlsoProcessed: []string{"e1"}}, false},
		{"also processed empty id", stead.Bundle{ProcessedEventID: "e0", AlsoProcessed: []string{"e1", ""}}, false},
		{"also processed nul", stead.Bundle{ProcessedEventID: "e0", AlsoProcessed: []string{"e\x00"}}, false},
		{"also processed invalid utf8", stead.Bundle{ProcessedEventID: "e0", AlsoProcessed: []string{"e\xff"}}, false},
		{"also processed too long", stead.Bundle{ProcessedEventID: "e0", AlsoProcessed: []string{strings.Repeat("e", stead.MaxIDLen+1)}}, false},
		{"also processed repeated", stead.Bundle{ProcessedEventID: "e0", AlsoProcessed: []string{"e1", "e2", "e1"}}, false},
		{"also processed repeated in a long list", stead.Bundle{ProcessedEventID: "e", AlsoProcessed: append(eventIDs(40), "ev-39")}, false},
		{"also processed is the processed id", stead.Bundle{ProcessedEventID: "e0", AlsoProcessed: []string{"e1", "e0"}}, false},
		{"also processed over MaxBatch", stead.Bundle{ProcessedEventID: "e", AlsoProcessed: eventIDs(stead.MaxBatch + 1)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.b.Validate()
			if tt.ok && err != nil {
				t.Fatalf("Validate = %v, want nil", err)
			}
			if !tt.ok && !errors.Is(err, stead.ErrInvalid) {
				t.Fatalf("Validate = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestCloneIsDeep(t *testing.T) {
	e := validExecution()
	e.History = map[string]string{"a": "a.b"}
	e.Children = map[string]stead.ChildState{"c": {RootPath: "r", Result: json.RawMessage(`{"x":1}`)}}
	e.InvokeSeq = map[string]int{"p": 1}
	e.Timers = map[string]time.Time{"s": time.Unix(5, 0)}
	e.Deferred = []stead.Event{{ID: "d", Kind: "k", Data: json.RawMessage(`{}`)}}
	e.StartContext = json.RawMessage(`{"s":1}`)
	e.DeadLetter = &stead.DeadLetter{Event: stead.Event{ID: "e", Kind: "k", Data: json.RawMessage(`{"d":1}`)},
		Status: stead.StatusRunning, Context: json.RawMessage(`{"c":1}`),
		History: map[string]string{"a": "a.b"}, Timers: map[string]time.Time{"s": time.Unix(5, 0)}}
	c := e.Clone()
	c.StartContext[2] = 'Z'
	c.DeadLetter.Event.Data[2] = 'Z'
	c.DeadLetter.Context[2] = 'Z'
	c.DeadLetter.History["a"] = "changed"
	c.DeadLetter.Timers["s"] = time.Unix(6, 0)
	c.DeadLetter.ActivePath = "elsewhere"
	if string(e.StartContext) != `{"s":1}` || string(e.DeadLetter.Event.Data) != `{"d":1}` ||
		string(e.DeadLetter.Context) != `{"c":1}` || e.DeadLetter.History["a"] != "a.b" ||
		!e.DeadLetter.Timers["s"].Equal(time.Unix(5, 0)) || e.DeadLetter.ActivePath != "" {
		t.Fatalf("Clone shares the start context or the dead letter with the execution it copied: %+v", e.DeadLetter)
	}
	c.Context[2] = 'X'
	c.History["a"] = "changed"
	c.Children["c"].Result[2] = 'Y'
	c.InvokeSeq["p"] = 2
	c.Timers["s"] = time.Unix(6, 0)
	c.Deferred[0].Data[0] = '['
	if string(e.Context) != `{"amount":10}` || e.History["a"] != "a.b" || string(e.Children["c"].Result) != `{"x":1}` ||
		e.InvokeSeq["p"] != 1 || !e.Timers["s"].Equal(time.Unix(5, 0)) || string(e.Deferred[0].Data) != `{}` {
		t.Fatalf("Clone shares memory with the execution it copied: %+v", e)
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	e := validExecution()
	e.Version = 3
	e.FinishedAt = time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	b, err := stead.EncodeExecution(e)
	if err != nil {
		t.Fatal(err)
	}
	got, err := stead.DecodeExecution(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != e.ID || got.Version != 3 || !got.FinishedAt.Equal(e.FinishedAt) || string(got.Context) != string(e.Context) {
		t.Fatalf("round trip changed the execution: %+v", got)
	}
}

// eventIDs returns n distinct event ids.
func eventIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("ev-%d", i)
	}
	return ids
}

// TestPrepareWriteCopiesAlsoProcessed checks that the write owns its AlsoProcessed: a backend may
// keep it, and the caller may reuse its slice.
func TestPrepareWriteCopiesAlsoProcessed(t *testing.T) {
	also := []string{"e1", "e2"}
	w, err := stead.PrepareWrite(validExecution(), stead.Bundle{ProcessedEventID: "e0", AlsoProcessed: also})
	if err != nil {
		t.Fatal(err)
	}
	w.Bundle.AlsoProcessed[0] = "changed"
	also[1] = "reused"
	if also[0] != "e1" || w.Bundle.AlsoProcessed[1] != "e2" {
		t.Fatalf("the write shares AlsoProcessed with the caller: %q, %q", also, w.Bundle.AlsoProcessed)
	}
	w, err = stead.PrepareWrite(validExecution(), stead.Bundle{AlsoProcessed: []string{}})
	if err != nil || w.Bundle.AlsoProcessed != nil {
		t.Fatalf("an empty AlsoProcessed = %q, %v; want nil", w.Bundle.AlsoProcessed, err)
	}
}

func TestPrepareWrite(t *testing.T) {
	est := time.FixedZone("EST", -5*3600)
	e := validExecution()
	e.Version = 3
	e.CreatedAt = time.Date(2026, 1, 2, 3, 4, 5, 6789, est)
	e.Timers = map[string]time.Time{"a": time.Date(2026, 1, 2, 3, 4, 5, 1999, est)}
	e.Context = json.RawMessage{}
	before := e.Clone()
	b := stead.Bundle{
		Emits: []stead.Emit{{Target: "t", Event: stead.Event{ID: "e1", Kind: "K", Data: json.RawMessage{}, CreatedAt: e.CreatedAt}}},
		Timers: []stead.TimerOp{
			{Action: stead.TimerSchedule, Path: "x", FireAt: e.CreatedAt},
			{Action: stead.TimerSchedule, Path: "y", FireAt: e.CreatedAt},
			{Action: stead.TimerCancel, Path: "x"},
		},
		Trace: &stead.TraceStep{Index: 7, At: e.CreatedAt},
	}
	w, err := stead.PrepareWrite(e, b)
	if err != nil {
		t.Fatal(err)
	}
	utcMicros := time.Date(2026, 1, 2, 8, 4, 5, 6000, time.UTC)
	switch {
	case w.Expected != 3 || w.Execution.Version != 4:
		t.Fatalf("versions: expected %d, new %d; want 3 and 4", w.Expected, w.Execution.Version)
	case w.Execution.CreatedAt != utcMicros || w.Execution.Timers["a"] != time.Date(2026, 1, 2, 8, 4, 5, 1000, time.UTC):
		t.Fatalf("times not in UTC microseconds: %v, %v", w.Execution.CreatedAt, w.Execution.Timers)
	case w.Execution.Context != nil || w.Bundle.Emits[0].Event.Data != nil:
		t.Fatal("an empty JSON document is not nil")
	case w.Bundle.Emits[0].Event.CreatedAt != utcMicros || w.Bundle.Trace.At != utcMicros || w.Bundle.Trace.Index != 0:
		t.Fatalf("bundle not normalised: %+v %+v", w.Bundle.Emits[0], w.Bundle.Trace)
	case len(w.Bundle.Timers) != 2 || w.Bundle.Timers[0].Path != "y" || w.Bundle.Timers[1] != (stead.TimerOp{Action: stead.TimerCancel, Path: "x"}):
		t.Fatalf("timer ops not reduced to their net effect in order: %+v", w.Bundle.Timers)
	}
	got, err := stead.DecodeExecution(w.Record)
	if err != nil || got.Version != 4 || !got.CreatedAt.Equal(utcMicros) {
		t.Fatalf("record: %+v, %v", got, err)
	}
	if !reflect.DeepEqual(e, before) || b.Trace.Index != 7 || b.Timers[0].Path != "x" || b.Emits[0].Event.Data == nil {
		t.Fatal("PrepareWrite changed its arguments")
	}
	for name, bad := range map[string]*stead.Execution{
		"nil":              nil,
		"negative version": {ID: "x", DefinitionID: "d", Status: stead.StatusRunning, Version: -1},
		"year 10000":       {ID: "x", DefinitionID: "d", Status: stead.StatusRunning, CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		"offset past 9999": {ID: "x", DefinitionID: "d", Status: stead.StatusRunning, UpdatedAt: time.Date(9999, 12, 31, 23, 0, 0, 0, est)},
	} {
		if _, err := stead.PrepareWrite(bad, stead.Bundle{}); !errors.Is(err, stead.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	far := stead.Bundle{Timers: []stead.TimerOp{{Action: stead.TimerSchedule, Path: "p", FireAt: time.Date(17941134906, 1, 1, 0, 0, 0, 0, time.UTC)}}}
	if _, err := stead.PrepareWrite(validExecution(), far); !errors.Is(err, stead.ErrInvalid) {
		t.Errorf("a timer in year 17,941,134,906: %v, want ErrInvalid", err)
	}
}

func TestConflictErrorIs(t *testing.T) {
	var err error = &stead.ConflictError{ID: "x", Expected: 1, Found: 2}
	if !errors.Is(err, stead.ErrConflict) || errors.Is(err, stead.ErrNotFound) {
		t.Fatal("ConflictError must match ErrConflict and nothing else")
	}
	if !strings.Contains(err.Error(), "expected version 1, found 2") {
		t.Fatalf("message = %q", err.Error())
	}
}

// TestPrepareWriteNormalisesTheDeadLetter checks that the times of a dead letter are stored like
// every other time, UTC at microsecond precision, and that the caller's dead letter is left alone.
func TestPrepareWriteNormalisesTheDeadLetter(t *testing.T) {
	zone := time.FixedZone("east", 3*3600)
	at := time.Date(2026, 1, 2, 11, 4, 5, 6789, zone)
	want := at.UTC().Truncate(time.Microsecond)
	e := validExecution()
	e.StartContext = json.RawMessage{}
	e.DeadLetter = &stead.DeadLetter{Event: stead.Event{ID: "ev", Kind: "k", CreatedAt: at, Data: json.RawMessage{}},
		Status: stead.StatusRunning, Context: json.RawMessage{}, Timers: map[string]time.Time{"s": at}}
	before := e.Clone()
	w, err := stead.PrepareWrite(e, stead.Bundle{})
	if err != nil {
		t.Fatal(err)
	}
	d := w.Execution.DeadLetter
	if d.Event.CreatedAt != want || d.Timers["s"] != want || d.Context != nil || d.Event.Data != nil || w.Execution.StartContext != nil {
		t.Fatalf("dead letter not normalised: %+v, start context %q", d, w.Execution.StartContext)
	}
	if !reflect.DeepEqual(e, before) {
		t.Fatal("PrepareWrite changed the caller's dead letter")
	}
}

func TestStatusErrorIsInvalid(t *testing.T) {
	err := error(&stead.StatusError{ID: "o-1", Op: "resume", Status: stead.StatusRunning, Reason: "it is not suspended"})
	if !errors.Is(err, stead.ErrInvalid) || errors.Is(err, stead.ErrConflict) {
		t.Fatalf("%v: want ErrInvalid alone", err)
	}
	if got := err.Error(); got != `stead: resume "o-1": execution is running: it is not suspended` {
		t.Fatalf("message %q", got)
	}
}
