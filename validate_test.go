package stead_test

import (
	"encoding/json"
	"errors"
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
		{"bad deferred event", func(e *stead.Execution) { e.Deferred = []stead.Event{{ID: "", Kind: "k"}} }},
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
		{"emit nul target", stead.Bundle{Emits: []stead.Emit{{Target: "\x00", Event: ev}}}, false},
		{"processed id invalid utf8", stead.Bundle{ProcessedEventID: "\xff"}, false},
		{"spawn without child", stead.Bundle{Spawns: []stead.Spawn{{RootPath: "r"}}}, false},
		{"spawn context array", stead.Bundle{Spawns: []stead.Spawn{{ChildID: "c", Context: json.RawMessage(`[]`)}}}, false},
		{"schedule without time", stead.Bundle{Timers: []stead.TimerOp{{Action: stead.TimerSchedule, Path: "a"}}}, false},
		{"timer without path", stead.Bundle{Timers: []stead.TimerOp{{Action: stead.TimerCancel}}}, false},
		{"unknown timer action", stead.Bundle{Timers: []stead.TimerOp{{Action: "snooze", Path: "a"}}}, false},
		{"trace nul action", stead.Bundle{Trace: &stead.TraceStep{Actions: []string{"a\x00"}}}, false},
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
	c := e.Clone()
	c.Context[2] = 'X'
	c.History["a"] = "changed"
	c.Children["c"].Result[2] = 'Y'
	c.InvokeSeq["p"] = 2
	c.Timers["s"] = time.Unix(6, 0)
	c.Deferred[0].Data[0] = '['
	if string(e.Context) != `{"amount":10}` || e.History["a"] != "a.b" || string(e.Children["c"].Result) != `{"x":1}` ||
		e.InvokeSeq["p"] != 1 || !e.Timers["s"].Equal(time.Unix(5, 0)) || string(e.Deferred[0].Data) != `{}` {
		t.Fatalf("Clone shares memory with the original: %+v", e)
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

func TestEncodeNextVersion(t *testing.T) {
	e := validExecution()
	e.Version = 3
	b, err := stead.EncodeNextVersion(e)
	if err != nil {
		t.Fatal(err)
	}
	got, err := stead.DecodeExecution(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != 4 || e.Version != 3 {
		t.Fatalf("encoded version %d from version %d, want 4 from an untouched 3", got.Version, e.Version)
	}
	e.Version = -1 // -1+1 would pass Validate
	if _, err := stead.EncodeNextVersion(e); !errors.Is(err, stead.ErrInvalid) {
		t.Fatalf("negative version: %v, want ErrInvalid", err)
	}
	if _, err := stead.EncodeNextVersion(nil); !errors.Is(err, stead.ErrInvalid) {
		t.Fatalf("nil execution: %v, want ErrInvalid", err)
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
