package chart

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/steadhq/stead"
)

// Action is a Go function a definition refers to by name. It runs inside Engine.Step, so it must
// be deterministic given its ActionContext; work with side effects outside the process should be
// made idempotent with ActionContext.Key. A returned error fails the execution, or takes the
// nearest error transition.
type Action func(ActionContext) (ActionResult, error)

// Guard decides whether a transition may be taken. It must be deterministic and free of side
// effects.
type Guard func(GuardContext) bool

// Registry holds the actions and guards definitions refer to by name. Register everything
// before NewEngine; a Registry is not safe for concurrent registration, but engines only read it.
type Registry struct {
	actions map[string]Action
	guards  map[string]Guard
	labels  map[string][]string // selectors: the labels each may return
	defs    map[string]*Definition
}

// Definition makes def known as a machine that invoking states may run. When a registry knows
// any definition, Validate checks that every invoked definition is one of them.
func (r *Registry) Definition(def *Definition) *Registry {
	if r.defs == nil {
		r.defs = map[string]*Definition{}
	}
	r.defs[def.ID] = def
	return r
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{actions: map[string]Action{}, guards: map[string]Guard{}, labels: map[string][]string{}}
}

// Selector registers fn under name as an action that returns one of labels in
// ActionResult.Label, for a selector state (State.Select) to pick its case with. Validate checks
// each selector state's cases against labels.
func (r *Registry) Selector(name string, labels []string, fn Action) *Registry {
	r.actions[name] = fn
	r.labels[name] = slices.Clone(labels)
	return r
}

// Labels returns the labels a selector declared, and whether name is a selector.
func (r *Registry) Labels(name string) ([]string, bool) {
	l, ok := r.labels[name]
	return l, ok
}

// Action registers fn under name, replacing any earlier one.
func (r *Registry) Action(name string, fn Action) *Registry {
	r.actions[name] = fn
	delete(r.labels, name)
	return r
}

// Guard registers fn under name, replacing any earlier one.
func (r *Registry) Guard(name string, fn Guard) *Registry {
	r.guards[name] = fn
	return r
}

// HasAction reports whether an action is registered under name.
func (r *Registry) HasAction(name string) bool { _, ok := r.actions[name]; return ok }

// HasGuard reports whether a guard is registered under name.
func (r *Registry) HasGuard(name string) bool { _, ok := r.guards[name]; return ok }

// ActionResult is what an action asks for: context changes and events to send. The zero value
// changes nothing.
type ActionResult struct {
	// Set assigns context keys; each value is encoded with encoding/json.
	Set map[string]any
	// Delete removes context keys (after Set is applied).
	Delete []string
	// Send lists events to deliver after the step commits, in order.
	Send []Message
	// Label is a selector's answer: the case of its state's Select to take.
	Label string
}

// Message is an event an action sends.
type Message struct {
	// To is the target execution id; empty means this execution itself.
	To   string
	Kind string
	// Data is encoded with encoding/json; nil sends no data.
	Data any
}

// Values is read access to an execution's context (a JSON object) while a step runs. It sees the
// changes of the actions that ran before it in the same step.
type Values struct{ c *ctxState }

// Get returns the raw JSON value of key, or nil when the key is absent.
func (v Values) Get(key string) json.RawMessage {
	if v.c == nil {
		return nil
	}
	raw, ok := v.c.get(key)
	if !ok {
		return nil
	}
	return bytes.Clone(raw) // raw may be the input execution's bytes
}

// peek is Get without the copy, for getters that only read the bytes.
func (v Values) peek(key string) json.RawMessage {
	if v.c == nil {
		return nil
	}
	raw, _ := v.c.get(key)
	return raw
}

// Lookup decodes the value of key into dst and reports whether the key was present.
func (v Values) Lookup(key string, dst any) (bool, error) {
	raw := v.Get(key)
	if raw == nil {
		return false, nil
	}
	return true, json.Unmarshal(raw, dst)
}

// String returns the string at key, or "" when it is absent or not a string.
func (v Values) String(key string) string {
	if raw := v.peek(key); len(raw) >= 2 && raw[0] == '"' && bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1])
	}
	var s string
	if ok, err := v.Lookup(key, &s); !ok || err != nil {
		return ""
	}
	return s
}

// Float returns the number at key, or 0 when it is absent or not a number.
func (v Values) Float(key string) float64 {
	if raw := v.peek(key); len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
		f, err := strconv.ParseFloat(string(raw), 64)
		if err == nil {
			return f
		}
	}
	var f float64
	if ok, err := v.Lookup(key, &f); !ok || err != nil {
		return 0
	}
	return f
}

// Bool returns the boolean at key, or false when it is absent or not a boolean.
func (v Values) Bool(key string) bool {
	switch string(v.peek(key)) {
	case "true":
		return true
	case "false":
		return false
	}
	var b bool
	if ok, err := v.Lookup(key, &b); !ok || err != nil {
		return false
	}
	return b
}

// Decode decodes the whole context into dst.
func (v Values) Decode(dst any) error {
	return json.Unmarshal(v.JSON(), dst)
}

// JSON returns the whole context as a JSON object.
func (v Values) JSON() json.RawMessage {
	if v.c == nil {
		return json.RawMessage("{}")
	}
	raw, err := v.c.encode()
	if err != nil {
		return json.RawMessage("{}")
	}
	return raw
}

// GuardContext is what a guard sees.
type GuardContext struct {
	Values
	ExecutionID string
	// State is the path of the transition's source state.
	State string
	Event stead.Event
}

// ActionContext is what an action sees.
type ActionContext struct {
	Values
	ExecutionID string
	ParentID    string
	// State is the path of the state whose entry or exit runs the action, or of the
	// transition's source state.
	State string
	Event stead.Event
	// Key is "<execution id>:<version>:<index>": stable across retries of the same step (a
	// worker's redelivery, or an attempt of a Retry policy, which keeps the first attempt's
	// version), unique across steps, so external effects keyed by it happen at most once.
	Key string
	// Attempt counts the runs of this event's step under a Retry policy: 1 for the first.
	Attempt int
}

// DecodeEvent decodes the event's data into dst.
func (a ActionContext) DecodeEvent(dst any) error {
	if len(a.Event.Data) == 0 {
		return nil
	}
	return json.Unmarshal(a.Event.Data, dst)
}

// ctxState is the execution context during a step: the encoded form until something needs the
// keys, the decoded map afterwards, re-encoded only if an action changed it.
type ctxState struct {
	raw json.RawMessage
	m   map[string]json.RawMessage
	// patch holds, sorted by key, what actions set while m is not decoded: a step that reads and
	// sets a few keys of a small context never builds the map (see encode).
	patch   []member
	inline  [2]member // patch's first backing array: most actions set a key or two
	scratch [64]byte  // where the values of those keys are encoded, while they fit
	used    int
	checked bool // raw is known to be valid JSON
	dirty   bool // m or patch holds changes raw does not have yet
	// changed records that the context differs from the step's input, even after encode
	// caught raw up (a spawn encodes the context mid-step).
	changed bool
	err     error
}

func (c *ctxState) decode() error {
	if c.m != nil || c.err != nil {
		return c.err
	}
	m := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(c.raw)) > 0 {
		var err error
		if m, err = decodeObject(c.raw); err != nil {
			c.err = fmt.Errorf("context is not a JSON object: %w", err)
			return c.err
		}
	}
	for _, p := range c.patch {
		m[p.key] = p.val
	}
	c.m, c.patch = m, nil
	return nil
}

// get returns the value of key without building the map when it can.
func (c *ctxState) get(key string) (json.RawMessage, bool) {
	if c.m == nil && c.err == nil {
		for _, p := range c.patch {
			if p.key == key {
				return p.val, true
			}
		}
		if c.check() {
			if v, found, ok := lookupMember(c.raw, key); ok {
				return v, found
			}
		}
	}
	if c.decode() != nil {
		return nil, false
	}
	v, ok := c.m[key]
	return v, ok
}

// check reports whether raw is a valid JSON object, or empty, and remembers it.
func (c *ctxState) check() bool {
	if !c.checked {
		t := bytes.TrimSpace(c.raw)
		c.checked = len(t) == 0 || t[0] == '{' && json.Valid(t)
	}
	return c.checked
}

func (c *ctxState) encode() (json.RawMessage, error) {
	if !c.dirty {
		if len(c.raw) == 0 {
			return json.RawMessage("{}"), nil
		}
		return c.raw, nil
	}
	if c.m == nil {
		if raw, ok := mergeMembers(c.raw, c.patch); ok {
			c.raw, c.patch, c.dirty, c.checked = raw, nil, false, true
			return raw, nil
		}
		if err := c.decode(); err != nil {
			return nil, err
		}
	}
	raw, err := encodeObject(c.m)
	if err != nil {
		return nil, err
	}
	c.raw, c.dirty = raw, false
	return raw, nil
}

// apply merges an action's changes; values are encoded first so a failure changes nothing.
// With a schema, every key set must be declared with the value's type, and no required key
// may be deleted.
func (c *ctxState) apply(r *ActionResult, sc *schema) error {
	if len(r.Set) == 0 && len(r.Delete) == 0 {
		return nil
	}
	if c.m == nil && (len(r.Delete) > 0 || !c.check()) {
		if err := c.decode(); err != nil {
			return err
		}
	}
	// Encoded first, so that a failure changes nothing; sorted, so that when several values
	// fail to encode the reported one is always the same.
	var small [8]string
	keys := small[:0]
	for k := range r.Set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var smallVals [8]json.RawMessage
	vals := smallVals[:0]
	for _, k := range keys {
		raw, err := c.encodeValue(r.Set[k])
		if err != nil {
			return fmt.Errorf("context key %q: %w", k, err)
		}
		if sc != nil {
			if err := sc.checkValue(k, raw); err != nil {
				return err
			}
		}
		vals = append(vals, raw)
	}
	if sc != nil {
		for _, k := range r.Delete {
			if d := sc.keys[k]; d != nil && d.Required {
				return fmt.Errorf("context key %q is required and cannot be deleted", k)
			}
		}
	}
	if c.m == nil {
		if c.patch == nil {
			c.patch = c.inline[:0]
		}
		for i, k := range keys {
			c.patch = setMember(c.patch, k, vals[i])
		}
		c.dirty, c.changed = true, true
		return nil
	}
	for i, k := range keys {
		c.m[k] = vals[i]
	}
	// The decoded map belongs to this step alone (decode built it), so it is changed in place.
	for _, k := range r.Delete {
		delete(c.m, k)
	}
	c.dirty, c.changed = true, true
	return nil
}

// encodeValue encodes v into the step's scratch space when it fits, else on its own.
func (c *ctxState) encodeValue(v any) (json.RawMessage, error) {
	if c.used >= len(c.scratch) {
		return encodeValue(v)
	}
	raw, err := appendValue(c.scratch[c.used:c.used:len(c.scratch)], v)
	if err == nil && len(raw) > 0 && &raw[0] == &c.scratch[c.used] {
		c.used += len(raw) // written in place; capped, so nothing appends over the next one
		return raw[:len(raw):len(raw)], nil
	}
	return raw, err
}

// merge sets every key of a JSON object (the start event's data).
func (c *ctxState) merge(obj json.RawMessage) error {
	var add map[string]json.RawMessage
	if err := json.Unmarshal(obj, &add); err != nil {
		return err
	}
	if len(add) == 0 {
		return nil
	}
	if err := c.decode(); err != nil {
		return err
	}
	maps.Copy(c.m, add)
	c.dirty, c.changed = true, true
	return nil
}

func (c *ctxState) set(key string, raw json.RawMessage) error {
	if err := c.decode(); err != nil {
		return err
	}
	c.m[key] = raw
	c.dirty, c.changed = true, true
	return nil
}
