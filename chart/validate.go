package chart

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/steadhq/stead"
)

// Problem is one rule a definition breaks.
type Problem struct {
	Pos   Pos
	State string // dotted path of the state concerned, empty for the definition itself
	Msg   string
}

func (p Problem) String() string {
	var b strings.Builder
	if s := p.Pos.String(); s != "" {
		b.WriteString(s)
		b.WriteString(": ")
	}
	if p.State != "" {
		fmt.Fprintf(&b, "state %q: ", p.State)
	}
	b.WriteString(p.Msg)
	return b.String()
}

// ValidationError lists every problem found in a definition. It matches stead.ErrInvalid.
type ValidationError struct {
	Problems []Problem
}

func (e *ValidationError) Error() string {
	if len(e.Problems) == 1 {
		return "chart: invalid definition: " + e.Problems[0].String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "chart: invalid definition (%d problems):", len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n\t")
		b.WriteString(p.String())
	}
	return b.String()
}

// Unwrap makes errors.Is(err, stead.ErrInvalid) true.
func (e *ValidationError) Unwrap() error { return stead.ErrInvalid }

// MaxDepth bounds the nesting of states.
const MaxDepth = 32

// maxNameLen bounds a state name; paths stay far below stead.MaxIDLen this way.
const maxNameLen = 64

// Validate checks every rule of the model and returns a *ValidationError listing all problems,
// each with its position. With a nil registry, action and guard names are not checked.
//
// The rules: the definition has an id and states; names are identifiers ([A-Za-z_][A-Za-z0-9_-]*)
// and unique among siblings; compound states (and the top level) name an existing initial
// child; parallel states have compound regions and a completion transition without outcome or
// guard; final states have an outcome and no children or outgoing transitions; every target
// exists and stays inside its region (regions run as separate executions); internal transitions
// target a descendant; timers have positive durations; every state is reachable from the
// initial state; every action and guard name is registered.
func Validate(def *Definition, reg *Registry) error {
	v := &validator{reg: reg}
	if def == nil {
		return &ValidationError{Problems: []Problem{{Msg: "definition is nil"}}}
	}
	v.def = def
	v.check()
	if len(v.problems) > 0 {
		return &ValidationError{Problems: v.problems}
	}
	return nil
}

type validator struct {
	def      *Definition
	reg      *Registry
	problems []Problem
	index    map[string]*State
	parent   map[string]string
	region   map[string]string // state path -> path of the innermost region containing it (or itself)
}

func (v *validator) addf(pos Pos, state, format string, args ...any) {
	v.problems = append(v.problems, Problem{Pos: pos, State: state, Msg: fmt.Sprintf(format, args...)})
}

func validName(s string) bool {
	if s == "" || len(s) > maxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		case i > 0 && (c == '-' || c >= '0' && c <= '9'):
		default:
			return false
		}
	}
	return true
}

func validKind(s string) bool {
	return s != "" && len(s) <= stead.MaxIDLen && utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

func (v *validator) check() {
	d := v.def
	if !validKind(d.ID) {
		v.addf(d.Pos, "", "definition id %q must be non-empty UTF-8 text without NUL bytes", d.ID)
	}
	if len(d.States) == 0 {
		v.addf(d.Pos, "", "definition has no states")
		return
	}
	v.index = map[string]*State{}
	v.parent = map[string]string{}
	v.region = map[string]string{}
	v.collect("", nil, d.States, 1)
	v.checkContext()
	v.checkLimit(d.Limit)
	v.checkSchedules(d.Schedules)
	if d.Version < 0 {
		v.addf(d.Pos, "", "version %d must be positive (or 0 for none)", d.Version)
	}
	if d.Version > 0 && strings.Contains(d.ID, "@") {
		v.addf(d.Pos, "", "a versioned definition's id %q cannot hold '@', which separates the version", d.ID)
	}
	if d.TTL < 0 || d.TTL > MaxRetryDelay*12 {
		v.addf(d.Pos, "", "ttl %s must be positive and at most %s", d.TTL, MaxRetryDelay*12)
	}
	if d.RearmTTL && d.TTL == 0 {
		v.addf(d.Pos, "", "rearm_ttl needs a ttl")
	}
	for _, k := range d.Returns {
		if !validKind(k) {
			v.addf(d.Pos, "", "returns: %q is not a context key", k)
		}
	}
	if d.Initial == "" {
		v.addf(d.Pos, "", "missing initial state")
	} else if s := childNamed(d.States, d.Initial); s == nil {
		v.addf(d.Pos, "", "initial state %q is not a top-level state", d.Initial)
	}
	d.Walk(func(path string, s *State) {
		if v.index[path] != s {
			return // a duplicate: reported once by collect
		}
		v.checkState(path, s)
	})
	v.checkRetries()
	if len(v.problems) == 0 {
		v.checkReachable()
	}
}

// checkRetries checks the retry policies: each names an action the definition runs, and its
// numbers are in range.
func (v *validator) checkRetries() {
	if r := v.def.DefaultRetry; r != nil {
		for _, msg := range retryProblems(r) {
			v.addf(r.Pos.or(v.def.Pos), "", "default retry: %s", msg)
		}
	}
	if len(v.def.Retry) == 0 {
		return
	}
	used := map[string]bool{}
	mark := func(names []string) {
		for _, n := range names {
			used[n] = true
		}
	}
	v.def.Walk(func(_ string, s *State) {
		mark(s.Entry)
		mark(s.Exit)
		for _, ts := range [][]*Transition{s.On, s.Done} {
			for _, t := range ts {
				if t != nil {
					mark(t.Actions)
				}
			}
		}
		if s.Timeout != nil {
			mark(s.Timeout.Actions)
		}
		if s.OnError != nil {
			mark(s.OnError.Actions)
		}
		for _, t := range transientTransitions(s) {
			if t != nil {
				mark(t.Actions)
			}
		}
		if s.Select != nil {
			mark([]string{s.Select.Action})
		}
	})
	for _, name := range slices.Sorted(maps.Keys(v.def.Retry)) {
		r := v.def.Retry[name]
		if r == nil {
			v.addf(v.def.Pos, "", "retry policy of action %q is nil", name)
			continue
		}
		pos := r.Pos.or(v.def.Pos)
		switch {
		case !used[name]:
			v.addf(pos, "", "retry policy for action %q, which no state or transition runs", name)
		case v.reg != nil && !v.reg.HasAction(name):
			v.addf(pos, "", "retry policy for action %q, which is not registered", name)
		}
		for _, msg := range retryProblems(r) {
			v.addf(pos, "", "retry of %q: %s", name, msg)
		}
	}
}

// retryProblems lists what is out of range in r. A policy of one attempt (NoRetry) needs
// nothing else.
func retryProblems(r *Retry) []string {
	var out []string
	if r.Attempts == 1 {
		return nil
	}
	if r.Attempts < 2 || r.Attempts > MaxRetryAttempts {
		out = append(out, fmt.Sprintf("attempts %d must be 2..%d (the first run counts), or 1 for none", r.Attempts, MaxRetryAttempts))
	}
	if r.Backoff <= 0 || r.Backoff > MaxRetryDelay {
		out = append(out, fmt.Sprintf("backoff %s must be positive and at most %s", r.Backoff, MaxRetryDelay))
	}
	if r.Factor != 0 && (r.Factor < 1 || r.Factor > 100 || math.IsNaN(r.Factor)) {
		out = append(out, fmt.Sprintf("factor %g must be 1..100 (0 means 2)", r.Factor))
	}
	if r.Max != 0 && (r.Max < r.Backoff || r.Max > MaxRetryDelay) {
		out = append(out, fmt.Sprintf("max %s must be at least the backoff %s and at most %s", r.Max, r.Backoff, MaxRetryDelay))
	}
	if !(r.Jitter >= 0 && r.Jitter <= 1) {
		out = append(out, fmt.Sprintf("jitter %g must be 0..1", r.Jitter))
	}
	return out
}

// checkRetryPolicy refuses a policy out of range with an error wrapping stead.ErrInvalid.
func checkRetryPolicy(what string, r *Retry) error {
	if p := retryProblems(r); len(p) > 0 {
		return fmt.Errorf("chart: retry policy of %s: %s: %w", what, strings.Join(p, "; "), stead.ErrInvalid)
	}
	return nil
}

func childNamed(states []*State, name string) *State {
	for _, s := range states {
		if s != nil && s.Name == name {
			return s
		}
	}
	return nil
}

func (v *validator) collect(prefix string, parent *State, states []*State, depth int) {
	seen := map[string]Pos{}
	for _, s := range states {
		if s == nil {
			v.addf(Pos{}, prefix, "nil state")
			continue
		}
		path := joinPath(prefix, s.Name)
		if !validName(s.Name) {
			v.addf(s.Pos, prefix, "state name %q is not an identifier ([A-Za-z_][A-Za-z0-9_-]*, at most %d bytes)", s.Name, maxNameLen)
			continue
		}
		if first, dup := seen[s.Name]; dup {
			v.addf(s.Pos, path, "duplicate state name %q (first declared at %s)", s.Name, first)
			continue
		}
		seen[s.Name] = s.Pos
		if depth > MaxDepth {
			v.addf(s.Pos, path, "states nest deeper than %d levels", MaxDepth)
			continue
		}
		v.index[path] = s
		v.parent[path] = prefix
		switch {
		case parent != nil && parent.Parallel:
			v.region[path] = path
		default:
			v.region[path] = v.region[prefix]
		}
		v.collect(path, s, s.States, depth+1)
	}
}

func (v *validator) isRegion(path string) bool {
	p, ok := v.index[v.parent[path]]
	return ok && v.parent[path] != "" && p.Parallel
}

func (v *validator) checkState(path string, s *State) {
	region := v.isRegion(path)
	switch {
	case s.IsFinal():
		if !validName(s.Final) {
			v.addf(s.Pos, path, "final outcome %q is not an identifier", s.Final)
		}
		if len(s.States) > 0 || s.Parallel {
			v.addf(s.Pos, path, "a final state cannot have children")
		}
		if len(s.On) > 0 || s.Timeout != nil || len(s.Done) > 0 || s.OnError != nil {
			v.addf(s.Pos, path, "transitions out of a final state are not allowed")
		}
		if region {
			v.addf(s.Pos, path, "a region must be a compound state, not a final state")
		}
	case s.Parallel:
		if len(s.States) == 0 {
			v.addf(s.Pos, path, "a parallel state needs at least one region")
		}
		if s.Initial != "" {
			v.addf(s.Pos, path, "a parallel state has no initial state (all regions start)")
		}
		catchAll := false
		for _, t := range s.Done {
			if t.Outcome == "" && t.Guard == "" {
				catchAll = true
			}
		}
		if !catchAll {
			v.addf(s.Pos, path, "a parallel state needs a completion (done) transition without outcome or guard, so that every join leads somewhere")
		}
		for _, r := range s.States {
			if r != nil && validName(r.Name) && len(r.States) == 0 && !r.IsFinal() {
				v.addf(r.Pos, joinPath(path, r.Name), "a region must be a compound state with an initial state")
			}
		}
	case len(s.States) > 0:
		if s.Initial == "" {
			v.addf(s.Pos, path, "missing initial state")
		} else if childNamed(s.States, s.Initial) == nil {
			v.addf(s.Pos, path, "initial state %q is not a child", s.Initial)
		}
	default: // atomic
		if s.Initial != "" {
			v.addf(s.Pos, path, "initial %q set on a state without children", s.Initial)
		}
		if len(s.Done) > 0 && s.Invoke == nil {
			v.addf(s.Done[0].Pos.or(s.Pos), path, "completion (done) transitions need a compound, parallel or invoking state")
		}
		if region {
			v.addf(s.Pos, path, "a region must be a compound state with an initial state")
		}
	}
	if (s.History || s.DeepHistory) && (s.Parallel || len(s.States) == 0) {
		v.addf(s.Pos, path, "history needs a compound state")
	}
	if s.History && s.DeepHistory {
		v.addf(s.Pos, path, "a state has shallow or deep history, not both")
	}
	if len(s.EarlyExit) > 0 && !s.Parallel {
		v.addf(s.Pos, path, "early_exit needs a parallel state")
	}
	for _, o := range s.EarlyExit {
		if !validName(o) {
			v.addf(s.Pos, path, "early-exit outcome %q is not an identifier", o)
		}
	}
	if region && (len(s.On) > 0 || s.Timeout != nil || len(s.Done) > 0 || s.OnError != nil || len(s.Exit) > 0) {
		v.addf(s.Pos, path, "a region's root state runs as its own execution: it cannot have transitions, a timeout, an error transition or exit actions")
	}
	v.checkDefer(path, s)
	v.checkTransient(path, s)
	v.checkInvoke(path, s)
	v.checkActions(s.Pos, path, "entry", s.Entry)
	v.checkActions(s.Pos, path, "exit", s.Exit)
	for _, t := range s.On {
		if t == nil {
			v.addf(s.Pos, path, "nil transition")
			continue
		}
		pos := t.Pos.or(s.Pos)
		switch {
		case !validKind(t.Event):
			v.addf(pos, path, "transition has no valid event kind")
		case strings.HasPrefix(t.Event, "stead."):
			v.addf(pos, path, "event kind %q is reserved for the engine (use timeout, done or on_error)", t.Event)
		}
		if t.Outcome != "" {
			v.addf(pos, path, "outcome %q is only meaningful on a completion (done) transition", t.Outcome)
		}
		v.checkTransition(path, t, "on "+t.Event)
	}
	if s.Timeout != nil {
		pos := s.Timeout.Pos.or(s.Pos)
		if s.Timeout.After <= 0 {
			v.addf(pos, path, "timeout duration %s must be positive", s.Timeout.After)
		}
		if s.Timeout.Outcome != "" || s.Timeout.Event != "" {
			v.addf(pos, path, "a timeout transition takes no event or outcome")
		}
		v.checkTransition(path, &s.Timeout.Transition, "timeout")
	}
	for _, t := range s.Done {
		if t == nil {
			v.addf(s.Pos, path, "nil transition")
			continue
		}
		if t.Outcome != "" && !validName(t.Outcome) {
			v.addf(t.Pos.or(s.Pos), path, "completion outcome %q is not an identifier", t.Outcome)
		}
		v.checkTransition(path, t, "done")
	}
	if t := s.OnError; t != nil {
		if t.Target == "" {
			v.addf(t.Pos.or(s.Pos), path, "an error transition needs a target")
		}
		v.checkTransition(path, t, "on_error")
	}
}

// checkTransient checks choice points and selectors: states left as soon as they are entered.
func (v *validator) checkTransient(path string, s *State) {
	if len(s.Choice) == 0 && s.Select == nil {
		return
	}
	what := "a choice point"
	if s.Select != nil {
		what = "a selector"
		if len(s.Choice) > 0 {
			v.addf(s.Pos, path, "a state is a choice point or a selector, not both")
		}
	}
	if len(s.States) > 0 || s.Parallel || s.IsFinal() {
		v.addf(s.Pos, path, "%s cannot have children or be final", what)
	}
	if len(s.On) > 0 || s.Timeout != nil || len(s.Done) > 0 || len(s.Defer) > 0 || s.History || s.DeepHistory {
		v.addf(s.Pos, path, "%s is left as soon as it is entered: it takes no events, timeout, completion transitions, deferrals or history", what)
	}
	if len(s.Choice) > 0 {
		if len(s.Entry) > 0 || len(s.Exit) > 0 {
			v.addf(s.Pos, path, "a choice point runs no entry or exit actions (put them on its branches)")
		}
		for i, t := range s.Choice {
			if t == nil {
				v.addf(s.Pos, path, "nil choice branch")
				continue
			}
			pos := t.Pos.or(s.Pos)
			last := i == len(s.Choice)-1
			switch {
			case last && t.Guard != "":
				v.addf(pos, path, "choice: the last branch is the else and takes no guard")
			case !last && t.Guard == "":
				v.addf(pos, path, "choice: branch %d has no guard, so the branches after it are never taken", i+1)
			}
			if t.Target == "" {
				v.addf(pos, path, "choice: branch %d needs a target", i+1)
			}
			if t.Event != "" || t.Outcome != "" || t.Internal {
				v.addf(pos, path, "choice: a branch takes no event, outcome or internal flag")
			}
			v.checkTransition(path, t, "choice")
		}
	}
	if sel := s.Select; sel != nil {
		pos := sel.Pos.or(s.Pos)
		if sel.Action == "" {
			v.addf(pos, path, "select needs an action")
		}
		if len(sel.Cases) == 0 {
			v.addf(pos, path, "select needs at least one case")
		}
		labels, isSelector := []string(nil), false
		if v.reg != nil && sel.Action != "" {
			labels, isSelector = v.reg.Labels(sel.Action)
			if !isSelector {
				v.addf(pos, path, "select: action %q is not registered as a selector (Registry.Selector)", sel.Action)
			}
		}
		seen := map[string]bool{}
		hasElse := false
		for _, c := range sel.Cases {
			if c == nil {
				v.addf(pos, path, "nil select case")
				continue
			}
			cpos := c.Pos.or(pos)
			switch {
			case c.Label == ElseLabel:
				hasElse = true
			case !validName(c.Label):
				v.addf(cpos, path, "select: case label %q is not an identifier", c.Label)
			case isSelector && !slices.Contains(labels, c.Label):
				v.addf(cpos, path, "select: selector %q never returns %q (it declares %s)", sel.Action, c.Label, strings.Join(labels, ", "))
			}
			if seen[c.Label] {
				v.addf(cpos, path, "select: case %q is listed twice", c.Label)
			}
			seen[c.Label] = true
			if c.Target == "" {
				v.addf(cpos, path, "select: case %q needs a target", c.Label)
			}
			if c.Guard != "" || c.Event != "" || c.Outcome != "" || c.Internal {
				v.addf(cpos, path, "select: a case takes no guard, event, outcome or internal flag")
			}
			v.checkTransition(path, &c.Transition, "select "+c.Label)
		}
		if isSelector && !hasElse {
			for _, l := range labels {
				if !seen[l] {
					v.addf(pos, path, "select: no case for label %q of selector %q (add it, or an else case)", l, sel.Action)
				}
			}
		}
	}
}

// checkContext checks the declared context keys: named, typed, unique, defaults of their type,
// and no default on a required key. With keys declared, the returned keys must be among them.
func (v *validator) checkContext() {
	d := v.def
	seen := map[string]bool{}
	for _, k := range d.Context {
		if k == nil {
			v.addf(d.Pos, "", "nil context key")
			continue
		}
		pos := k.Pos.or(d.Pos)
		switch {
		case !validKind(k.Name):
			v.addf(pos, "", "context key %q needs a name of non-empty text", k.Name)
		case seen[k.Name]:
			v.addf(pos, "", "context key %q is declared twice", k.Name)
		}
		seen[k.Name] = true
		switch k.Type {
		case TypeString, TypeNumber, TypeInteger, TypeBoolean, TypeList, TypeObject, TypeAny:
		default:
			v.addf(pos, "", "context key %q: type %q is not one of string, number, integer, boolean, list, object, any", k.Name, k.Type)
			continue
		}
		if len(k.Default) > 0 {
			if !json.Valid(k.Default) {
				v.addf(pos, "", "context key %q: default is not JSON", k.Name)
			} else if got := typeOf(k.Default); !fits(k.Type, got) {
				v.addf(pos, "", "context key %q: default is %s, not a %s", k.Name, got, k.Type)
			}
			if k.Required {
				v.addf(pos, "", "context key %q is required and has a default; drop one", k.Name)
			}
		}
	}
	if len(d.Context) > 0 {
		for _, r := range d.Returns {
			if !seen[r] {
				v.addf(d.Pos, "", "returns: context key %q is not declared", r)
			}
		}
	}
}

// checkInvoke checks an invoking state: atomic, naming a definition (one the registry knows,
// when it knows any), with input keys, and a completion transition for every outcome.
func (v *validator) checkInvoke(path string, s *State) {
	inv := s.Invoke
	if inv == nil {
		return
	}
	pos := inv.Pos.or(s.Pos)
	if len(s.States) > 0 || s.Parallel || s.IsFinal() || len(s.Choice) > 0 || s.Select != nil {
		v.addf(pos, path, "an invoking state must be atomic: no children, regions, final outcome, choice or select")
	}
	switch {
	case !validKind(inv.Definition):
		v.addf(pos, path, "invoke needs a definition id")
	case v.reg != nil && len(v.reg.defs) > 0 && v.reg.defs[inv.Definition] == nil:
		v.addf(pos, path, "invoke: definition %q is not known (Registry.Definition)", inv.Definition)
	}
	for _, k := range slices.Sorted(maps.Keys(inv.Input)) {
		if !validKind(k) || !validKind(inv.Input[k]) {
			v.addf(pos, path, "invoke: input %q <- %q: keys must be non-empty text", k, inv.Input[k])
		}
	}
	if inv.ForEach == "" && (inv.As != "" || inv.Results != "" || inv.FailFast) {
		v.addf(pos, path, "invoke: as, results and fail_fast need for_each")
	}
	if inv.ForEach != "" && inv.As == "index" {
		v.addf(pos, path, "invoke: the item cannot be put under %q, which holds its index", inv.As)
	}
	catchAll := false
	for _, t := range s.Done {
		if t != nil && t.Outcome == "" && t.Guard == "" {
			catchAll = true
		}
	}
	if !catchAll {
		v.addf(pos, path, "an invoking state needs a completion (done) transition without outcome or guard, so that every child's end leads somewhere")
	}
}

// transientTransitions returns the branches of a choice point and the cases of a selector.
func transientTransitions(s *State) []*Transition {
	ts := slices.Clone(s.Choice)
	if s.Select != nil {
		for _, c := range s.Select.Cases {
			if c != nil {
				ts = append(ts, &c.Transition)
			}
		}
	}
	return ts
}

// checkDefer checks a state's deferred kinds: valid, not the engine's, not repeated, not also
// taken by one of the state's own transitions, and not on a final state.
func (v *validator) checkDefer(path string, s *State) {
	if len(s.Defer) == 0 {
		return
	}
	if s.IsFinal() {
		v.addf(s.Pos, path, "a final state defers nothing: it is never waited in")
	}
	seen := map[string]bool{}
	for _, k := range s.Defer {
		switch {
		case !validKind(k):
			v.addf(s.Pos, path, "defer: %q is not a valid event kind", k)
		case strings.HasPrefix(k, "stead."):
			v.addf(s.Pos, path, "defer: event kind %q is reserved for the engine", k)
		case seen[k]:
			v.addf(s.Pos, path, "defer: event kind %q is listed twice", k)
		default:
			for _, t := range s.On {
				if t != nil && t.Event == k {
					v.addf(t.Pos.or(s.Pos), path, "defer: the state both defers and takes %q; defer it in an enclosing state instead", k)
					break
				}
			}
		}
		seen[k] = true
	}
}

func (p Pos) or(q Pos) Pos {
	if p.Line == 0 && p.File == "" {
		return q
	}
	return p
}

func (v *validator) checkActions(pos Pos, path, what string, names []string) {
	for _, a := range names {
		switch {
		case a == "":
			v.addf(pos, path, "%s: empty action name", what)
		case v.reg != nil && !v.reg.HasAction(a):
			v.addf(pos, path, "%s: action %q is not registered", what, a)
		}
	}
}

func (v *validator) checkTransition(src string, t *Transition, what string) {
	pos := t.Pos.or(v.index[src].Pos)
	v.checkActions(pos, src, what, t.Actions)
	if t.Guard != "" && v.reg != nil && !v.reg.HasGuard(t.Guard) {
		v.addf(pos, src, "%s: guard %q is not registered", what, t.Guard)
	}
	if t.Target == "" {
		if t.Internal {
			v.addf(pos, src, "%s: an internal transition needs a target", what)
		}
		return
	}
	target := resolveTarget(v.index, src, t.Target)
	if target == "" {
		v.addf(pos, src, "%s: unknown target %q", what, t.Target)
		return
	}
	if v.isRegion(target) {
		v.addf(pos, src, "%s: target %q is a region's root state, which only its own execution enters", what, target)
		return
	}
	if rs, rt := v.region[src], v.region[target]; rs != rt {
		switch {
		case rt != "":
			v.addf(pos, src, "%s: target %q is inside region %q; regions run as separate executions and cannot be entered from outside", what, target, rt)
		default:
			v.addf(pos, src, "%s: target %q is outside region %q; a region can only leave by reaching a final state", what, target, rs)
		}
		return
	}
	if t.Internal && !strings.HasPrefix(target, src+".") {
		v.addf(pos, src, "%s: internal transition target %q is not a descendant of the source", what, target)
	}
}

// resolveTarget finds the state a transition on src means by name: src's own children first,
// then outward scope by scope to the top level. It returns "" when nothing matches.
func resolveTarget[S any](index map[string]S, src, name string) string {
	scope := src
	for {
		p := joinPath(scope, name)
		if _, ok := index[p]; ok {
			return p
		}
		if scope == "" {
			return ""
		}
		scope = parentPath(scope)
	}
}

// checkReachable marks every state an execution can enter, starting from the initial state and
// following initial children, regions and transition targets, and reports the others.
func (v *validator) checkReachable() {
	reached, entered := map[string]bool{}, map[string]bool{}
	var queue []string
	var enter func(path string)
	mark := func(path string) {
		for p := path; p != "" && !reached[p]; p = v.parent[p] {
			reached[p] = true
			queue = append(queue, p)
		}
	}
	enter = func(path string) {
		if entered[path] {
			return
		}
		entered[path] = true
		mark(path)
		s := v.index[path]
		switch {
		case s.Parallel:
			for _, r := range s.States {
				enter(joinPath(path, r.Name))
			}
		case len(s.States) > 0:
			enter(joinPath(path, s.Initial))
		}
	}
	enter(v.def.Initial)
	for len(queue) > 0 {
		path := queue[0]
		queue = queue[1:]
		s := v.index[path]
		var ts []*Transition
		ts = append(ts, s.On...)
		ts = append(ts, s.Done...)
		if s.Timeout != nil {
			ts = append(ts, &s.Timeout.Transition)
		}
		if s.OnError != nil {
			ts = append(ts, s.OnError)
		}
		ts = append(ts, transientTransitions(s)...)
		for _, t := range ts {
			if t == nil || t.Target == "" {
				continue
			}
			if target := resolveTarget(v.index, path, t.Target); target != "" {
				enter(target)
			}
		}
	}
	v.def.Walk(func(path string, s *State) {
		if !reached[path] && reached[v.parent[path]] || !reached[path] && v.parent[path] == "" {
			v.addf(s.Pos, path, "unreachable: no initial state or transition leads here")
		}
	})
}
