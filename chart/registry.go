package chart

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/steadhq/stead"
)

// Action is a Go function a definition refers to by name. It runs inside Engine.Step and may do
// I/O — call an HTTP API, charge a card, ask a model — through ActionContext.Context. A step is
// applied at least once: a worker that dies or loses its commit runs it again, so every effect
// outside the process must be made idempotent with ActionContext.Key, which names the same step
// on every run. A returned error fails the execution, takes the nearest error transition, or is
// retried under the definition's Retry policy.
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
// changes nothing. An action may also set context keys with ActionContext.Set and its typed
// forms, which cost no map; those changes are applied first, then Set, then Delete.
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
// changes of the actions that ran before it in the same step. It is valid only while the action
// or guard it was handed to runs: the engine reuses its state for later steps.
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
		if n, ok := smallInt(raw); ok {
			return float64(n)
		}
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

// smallInt parses a JSON integer of up to 15 digits, which a float64 holds exactly: the common
// case of Float, without ParseFloat.
func smallInt(raw []byte) (int64, bool) {
	neg := raw[0] == '-'
	d := raw
	if neg {
		d = raw[1:]
	}
	if len(d) == 0 || len(d) > 15 || len(d) > 1 && d[0] == '0' {
		return 0, false
	}
	var n int64
	for _, b := range d {
		if b < '0' || b > '9' {
			return 0, false
		}
		n = n*10 + int64(b-'0')
	}
	if neg {
		if n == 0 {
			return 0, false // -0: ParseFloat keeps the sign
		}
		n = -n
	}
	return n, true
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
	// Attempt counts the runs of this event's step under a Retry policy: 1 for the first.
	Attempt int
	// keyVersion and keyIndex are what Key names; the string is built only when asked for.
	keyVersion int64
	keyIndex   int
	ctx        context.Context // Context's answer; nil outside a step
}

// Context is the context the action's I/O should use (HTTP requests, database calls, payment
// providers, model calls). The worker cancels it when the action's deadline passes
// (worker.Config.ActionTimeout) and when the worker is stopping and its ShutdownTimeout is over;
// an action that sees it done should return its error, which fails the action like any other
// error (its retry policy or error transition applies). A step run by Engine.Step, and a zero
// ActionContext, give context.Background.
func (a ActionContext) Context() context.Context {
	if a.ctx == nil {
		return context.Background()
	}
	return a.ctx
}

// Key is "<execution id>:<version>:<index>": stable across retries of the same step (a
// worker's redelivery, or an attempt of a Retry policy, which keeps the first attempt's
// version), unique across steps, so external effects keyed by it happen at most once.
func (a ActionContext) Key() string { return actionKey(a.ExecutionID, a.keyVersion, a.keyIndex) }

func actionKey(id string, version int64, index int) string {
	var small [64]byte
	b := append(small[:0], id...)
	b = append(b, ':')
	b = strconv.AppendInt(b, version, 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(index), 10)
	return string(b)
}

// Set assigns the context key to v, encoded with encoding/json, as ActionResult.Set does. The
// change takes effect when the action returns without an error (a value that does not encode, or
// that breaks the definition's context declaration, fails the action); later actions of the step
// see it. SetFloat, SetInt, SetString and SetBool do the same for their types without boxing the
// value. On a zero ActionContext (outside a step) they do nothing.
func (a ActionContext) Set(key string, v any) {
	if a.c == nil {
		return
	}
	raw, err := a.c.encodeValue(v)
	a.c.stage(key, raw, err)
}

// SetFloat is Set for a number.
func (a ActionContext) SetFloat(key string, f float64) {
	if a.c == nil {
		return
	}
	if buf, ok := appendFloat(a.c.space(), f); ok {
		a.c.stage(key, a.c.took(buf), nil)
		return
	}
	a.Set(key, f)
}

// SetInt is Set for an integer.
func (a ActionContext) SetInt(key string, n int64) {
	if a.c != nil {
		a.c.stage(key, a.c.took(strconv.AppendInt(a.c.space(), n, 10)), nil)
	}
}

// SetBool is Set for a boolean.
func (a ActionContext) SetBool(key string, b bool) {
	if a.c != nil {
		a.c.stage(key, a.c.took(strconv.AppendBool(a.c.space(), b)), nil)
	}
}

// SetString is Set for a string.
func (a ActionContext) SetString(key, s string) {
	if a.c == nil {
		return
	}
	if plainString(s) {
		buf := append(a.c.space(), '"')
		buf = append(buf, s...)
		a.c.stage(key, a.c.took(append(buf, '"')), nil)
		return
	}
	a.Set(key, s)
}

// SetAttribute sets the execution's attribute key to v (stead.Execution.Attributes), the labels
// Store.List and Store.Count filter by; the zero AttrValue deletes the key, as DeleteAttribute
// does. Like Set, the change takes effect when the action returns without an error, and later
// actions of the step see it (Attribute). The step's commit stores the execution with it and
// rewrites the backend's index of the execution's attributes in the same transaction. A key or
// value a store would refuse at create (stead.CheckAttribute), or a change that would leave more
// than stead.MaxAttributes, fails the action with an error wrapping stead.ErrInvalid, which its
// error transition or retry policy handles like any other. On a zero ActionContext it does
// nothing.
func (a ActionContext) SetAttribute(key string, v stead.AttrValue) {
	if a.c == nil {
		return
	}
	if !v.IsZero() {
		if err := stead.CheckAttribute(key, v); err != nil {
			a.c.stageAttrErr(err)
			return
		}
	} else if err := stead.CheckAttrKey(key); err != nil {
		a.c.stageAttrErr(err)
		return
	}
	a.c.attrStaged = append(a.c.attrStaged, attrChange{key, v})
}

// DeleteAttribute removes the execution's attribute key, if it has one, as SetAttribute does
// with the zero AttrValue.
func (a ActionContext) DeleteAttribute(key string) { a.SetAttribute(key, stead.AttrValue{}) }

// Attribute returns the execution's attribute key as this action sees it: the value the step
// started with, changed by the earlier actions of the step and by what this action set so far.
func (a ActionContext) Attribute(key string) (stead.AttrValue, bool) {
	if a.c == nil {
		return stead.AttrValue{}, false
	}
	for i := len(a.c.attrStaged) - 1; i >= 0; i-- {
		if ch := a.c.attrStaged[i]; ch.key == key {
			return ch.val, !ch.val.IsZero()
		}
	}
	v, ok := a.c.attrs[key]
	return v, ok
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
	patch  []member
	inline [2]member // patch's first backing array: most actions set a key or two
	// staged holds, in call order, what the running action set through ActionContext.Set;
	// apply takes it when the action returns, discard drops it when the action fails.
	staged    []member
	stagedErr error
	// attrs are the execution's attributes as the running action started with them; attrStaged
	// holds, in call order, what it changed with ActionContext.SetAttribute, and attrErr the
	// first refusal. The step takes them when the action returns (stepper.takeAttributes).
	attrs      map[string]stead.AttrValue
	attrStaged []attrChange
	attrErr    error
	stagedIn   [2]member
	scratch    [64]byte // where the values of those keys are encoded, while they fit
	used       int
	checked    bool // raw is known to be valid JSON
	dirty      bool // m or patch holds changes raw does not have yet
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
		c.checked = len(t) == 0 || t[0] == '{' && validJSON(t)
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

// smallContext is the size up to which a step's new context is stored in the allocation of its
// execution.
const smallContext = 64

// encodeFinal is encode for the context a step ends with, written into space when it fits
// there (space belongs to the returned execution). raw is not caught up: the step is over.
func (c *ctxState) encodeFinal(space []byte) (json.RawMessage, error) {
	if c.dirty && c.m == nil && cap(space) > 0 {
		if raw, ok := mergeMembersInto(space, c.raw, c.patch); ok {
			return raw[:len(raw):len(raw)], nil
		}
	}
	return c.encode()
}

// apply merges an action's changes; values are encoded first so a failure changes nothing.
// With a schema, every key set must be declared with the value's type, and no required key
// may be deleted.
func (c *ctxState) apply(r *ActionResult, sc *schema) error {
	staged, serr := c.staged, c.stagedErr
	c.staged, c.stagedErr = c.staged[:0], nil
	if serr != nil {
		return serr
	}
	if len(staged) == 0 && len(r.Set) == 0 && len(r.Delete) == 0 {
		return nil
	}
	if sc != nil {
		for _, p := range staged {
			if err := sc.checkValue(p.key, p.val); err != nil {
				return err
			}
		}
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
		for _, p := range staged {
			c.patch = setMember(c.patch, p.key, p.val)
		}
		for i, k := range keys {
			c.patch = setMember(c.patch, k, vals[i])
		}
		c.dirty, c.changed = true, true
		return nil
	}
	for _, p := range staged {
		c.m[p.key] = p.val
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

// stage records a change an action made with ActionContext.Set; the first error sticks.
func (c *ctxState) stage(key string, raw json.RawMessage, err error) {
	if err != nil {
		if c.stagedErr == nil {
			c.stagedErr = fmt.Errorf("context key %q: %w", key, err)
		}
		return
	}
	if c.staged == nil {
		c.staged = c.stagedIn[:0]
	}
	c.staged = append(c.staged, member{key, raw})
}

// discard drops what a failed action staged.
func (c *ctxState) discard() {
	c.staged, c.stagedErr = c.staged[:0], nil
	c.attrStaged, c.attrErr = c.attrStaged[:0], nil
}

// attrChange is one change an action made with ActionContext.SetAttribute: the zero value deletes.
type attrChange struct {
	key string
	val stead.AttrValue
}

// stageAttrErr records a refused attribute change; the first refusal sticks.
func (c *ctxState) stageAttrErr(err error) {
	if c.attrErr == nil {
		c.attrErr = err
	}
}

// space returns the free part of the scratch space, empty with its capacity capped, for a value
// to be appended to; took claims what was written, or keeps buf if append had to move it.
func (c *ctxState) space() []byte { return c.scratch[c.used:c.used:len(c.scratch)] }

func (c *ctxState) took(buf []byte) json.RawMessage {
	if len(buf) > 0 && c.used < len(c.scratch) && &buf[0] == &c.scratch[c.used] {
		c.used += len(buf)
	}
	return buf[:len(buf):len(buf)]
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
