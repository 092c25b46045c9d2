package turn

import (
	"encoding/json"
	"time"
)

// ClockTime is how a store stamps a time it owns: UTC, truncated to microseconds (PostgreSQL's
// timestamptz precision), so the value a write returns equals the one read back later. Backends
// also pass caller-supplied times through it.
func ClockTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// ReceiptEvent is one event as a receipt cites it.
type ReceiptEvent struct {
	Sequence  int64           `json:"sequence"`
	EventID   ID              `json:"event_id"`
	EventType string          `json:"event_type"`
	Revision  Revision        `json:"revision"`
	Payload   json.RawMessage `json:"payload"`
	// Redacted is set when the payload was erased; Payload is then null.
	Redacted bool `json:"redacted,omitempty"`
}

// ReceiptGroup is the events one command committed on one case.
type ReceiptGroup struct {
	CaseKey   CaseKey        `json:"case_key"`
	CommandID ID             `json:"command_id"`
	Events    []ReceiptEvent `json:"events"`
}

// GroupForReceipts groups events by (case, command), groups in order of first appearance and
// events in append order within a group. A redacted event stays in its place, marked redacted
// with a null payload. It reads nothing from storage.
func GroupForReceipts(events []Event) []ReceiptGroup {
	type key struct {
		c   CaseKey
		cmd ID
	}
	index := map[key]int{}
	var out []ReceiptGroup
	for _, e := range events {
		k := key{e.CaseKey, e.CommandID}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, ReceiptGroup{CaseKey: e.CaseKey, CommandID: e.CommandID})
		}
		re := ReceiptEvent{Sequence: e.Sequence, EventID: e.EventID, EventType: e.EventType,
			Revision: e.CaseRevision, Payload: e.Payload}
		if e.Redaction != nil {
			re.Redacted = true
			re.Payload = json.RawMessage("null")
		}
		out[i].Events = append(out[i].Events, re)
	}
	return out
}
