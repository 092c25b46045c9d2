package stead

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/steadhq/stead/internal/check"
)

// EncodeExecution validates e and returns its JSON encoding, the form every SQL backend stores
// (PrepareWrite puts it in Write.Record, at the version the commit stores).
//
// The bytes are those of json.Marshal(e), written without reflection by appendExecution:
// encoding the record is a store's own largest cost in a state-only commit (the reflective
// encoder was about a quarter of a SQLite commit's CPU time), and json.Marshal would validate
// every embedded document a second time after Validate. TestRecordEncodingMatchesJSON and
// FuzzRecordEncoding hold the two encoders to identical output: a field added to Execution
// fails them until it is added to appendExecution.
func EncodeExecution(e *Execution) ([]byte, error) {
	if err := e.Validate(); err != nil {
		return nil, err
	}
	b, err := appendExecution(make([]byte, 0, 1024), e)
	if err != nil {
		return nil, check.Invalidf("execution %q does not encode: %v", e.ID, err)
	}
	if len(b) > MaxRecord {
		return nil, check.Invalidf("execution %q encodes to %d bytes, more than %d", e.ID, len(b), MaxRecord)
	}
	return b, nil
}

// DecodeExecution is the inverse of EncodeExecution.
func DecodeExecution(b []byte) (*Execution, error) {
	var e Execution
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("stead: decode execution: %w", err)
	}
	return &e, nil
}

// appendExecution follows the field order and the omitempty/omitzero tags of Execution.
func appendExecution(b []byte, e *Execution) ([]byte, error) {
	var err error
	b = append(b, `{"id":`...)
	b = appendString(b, e.ID)
	b = append(b, `,"definition_id":`...)
	b = appendString(b, e.DefinitionID)
	b = append(b, `,"status":`...)
	b = appendString(b, string(e.Status))
	b = appendOptString(b, `,"outcome":`, e.Outcome)
	b = appendOptString(b, `,"error":`, e.Error)
	b = appendOptString(b, `,"active_path":`, e.ActivePath)
	b = appendHistory(b, e.History)
	b = appendOptRaw(b, `,"context":`, e.Context)
	if len(e.Children) > 0 {
		b = append(b, `,"children":{`...)
		for i, k := range sortedKeys(e.Children) {
			if i > 0 {
				b = append(b, ',')
			}
			c := e.Children[k]
			b = appendString(b, k)
			b = append(b, `:{"root_path":`...)
			b = appendString(b, c.RootPath)
			if c.Finished {
				b = append(b, `,"finished":true`...)
			}
			b = appendOptString(b, `,"outcome":`, c.Outcome)
			b = appendOptRaw(b, `,"result":`, c.Result)
			b = appendOptString(b, `,"key":`, c.Key)
			b = append(b, '}')
		}
		b = append(b, '}')
	}
	b = appendOptString(b, `,"parent_id":`, e.ParentID)
	b = appendOptString(b, `,"child_id":`, e.ChildID)
	b = appendOptString(b, `,"root_path":`, e.RootPath)
	if len(e.InvokeSeq) > 0 {
		b = append(b, `,"invoke_seq":{`...)
		for i, k := range sortedKeys(e.InvokeSeq) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = strconv.AppendInt(b, int64(e.InvokeSeq[k]), 10)
		}
		b = append(b, '}')
	}
	if b, err = appendTimers(b, e.Timers); err != nil {
		return nil, err
	}
	b = appendStringMap(b, `,"timer_traces":{`, e.TimerTraces)
	if e.Priority != 0 {
		b = append(b, `,"priority":`...)
		b = strconv.AppendInt(b, int64(e.Priority), 10)
	}
	if len(e.Deferred) > 0 {
		b = append(b, `,"deferred":[`...)
		for i := range e.Deferred {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendEvent(b, &e.Deferred[i]); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	b = appendOptRaw(b, `,"start_context":`, e.StartContext)
	if d := e.DeadLetter; d != nil {
		b = append(b, `,"dead_letter":{"event":`...)
		if b, err = appendEvent(b, &d.Event); err != nil {
			return nil, err
		}
		b = append(b, `,"status":`...)
		b = appendString(b, string(d.Status))
		b = appendOptString(b, `,"active_path":`, d.ActivePath)
		b = appendOptRaw(b, `,"context":`, d.Context)
		b = appendHistory(b, d.History)
		if b, err = appendTimers(b, d.Timers); err != nil {
			return nil, err
		}
		b = append(b, '}')
	}
	if b, err = appendAttributes(b, e.Attributes); err != nil {
		return nil, err
	}
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, e.Version, 10)
	if b, err = appendOptTime(b, `,"created_at":`, e.CreatedAt); err != nil {
		return nil, err
	}
	if b, err = appendOptTime(b, `,"updated_at":`, e.UpdatedAt); err != nil {
		return nil, err
	}
	if b, err = appendOptTime(b, `,"finished_at":`, e.FinishedAt); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// appendEvent writes an event as {"id":…,"kind":…,"data":…,"created_at":…,"trace":…}.
func appendEvent(b []byte, ev *Event) ([]byte, error) {
	b = append(b, `{"id":`...)
	b = appendString(b, ev.ID)
	b = append(b, `,"kind":`...)
	b = appendString(b, ev.Kind)
	b = appendOptRaw(b, `,"data":`, ev.Data)
	b, err := appendOptTime(b, `,"created_at":`, ev.CreatedAt)
	if err != nil {
		return nil, err
	}
	b = appendOptString(b, `,"trace":`, ev.Trace)
	return append(b, '}'), nil
}

// appendHistory writes a history map as its ,"history" member, or nothing when it is empty.
func appendHistory(b []byte, h map[string]string) []byte {
	return appendStringMap(b, `,"history":{`, h)
}

// appendStringMap writes member (`,"name":{`) and the map's pairs in key order, or nothing when
// the map is empty.
func appendStringMap(b []byte, member string, h map[string]string) []byte {
	if len(h) == 0 {
		return b
	}
	b = append(b, member...)
	for i, k := range sortedKeys(h) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		b = appendString(b, h[k])
	}
	return append(b, '}')
}

// appendTimers writes a timers map as its ,"timers" member, or nothing when it is empty.
func appendTimers(b []byte, ts map[string]time.Time) ([]byte, error) {
	if len(ts) == 0 {
		return b, nil
	}
	b = append(b, `,"timers":{`...)
	for i, k := range sortedKeys(ts) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':', '"')
		var err error
		if b, err = ts[k].AppendText(b); err != nil { // map values are never omitted
			return nil, fmt.Errorf("timers %q: %w", k, err)
		}
		b = append(b, '"')
	}
	return append(b, '}'), nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys) // encoding/json sorts string keys byte-wise too
	return keys
}

func appendOptString(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendString(append(b, key...), s)
}

func appendOptTime(b []byte, key string, t time.Time) ([]byte, error) {
	if t.IsZero() {
		return b, nil
	}
	b = append(append(b, key...), '"')
	// AppendText is what Time.MarshalJSON writes between its quotes (RFC 3339 with
	// nanoseconds, refusing years outside 0..9999).
	b, err := t.AppendText(b)
	if err != nil {
		return nil, fmt.Errorf("%s %w", key, err)
	}
	return append(b, '"'), nil
}

// appendOptRaw writes an embedded JSON document (already validated) as encoding/json writes a
// json.RawMessage: compacted, with <, >, &, U+2028 and U+2029 escaped.
func appendOptRaw(b []byte, key string, raw []byte) []byte {
	if len(raw) == 0 {
		return b
	}
	b = append(b, key...)
	inString, escaped := false, false
	start := 0
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == '<' || c == '>' || c == '&':
			b = append(b, raw[start:i]...)
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			start = i + 1
		case c == 0xE2 && i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xA8:
			b = append(b, raw[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[raw[i+2]&0xF])
			i += 2
			start = i + 1
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			b = append(b, raw[start:i]...)
			start = i + 1
		}
	}
	return append(b, raw[start:]...)
}

const hexDigits = "0123456789abcdef"

// appendString writes s as encoding/json does with HTML escaping on: quoted, with ", \ and
// control characters escaped, <, > and & as \u003c, \u003e and \u0026, U+2028 and U+2029 escaped,
// and invalid UTF-8 replaced by U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(append(b, s[start:]...), '"')
}
