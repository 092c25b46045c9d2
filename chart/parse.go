package chart

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// MaxFileSize bounds a definition file.
const MaxFileSize = 1 << 20

// LoadFile reads and parses a definition file. The id defaults to the file's base name without
// extension.
func LoadFile(path string) (*Definition, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("chart: %w", err)
	}
	def, err := parse(path, strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)), data)
	if err != nil {
		return nil, err
	}
	return def, nil
}

// Parse reads a definition from YAML. name is used in error positions and is the default id.
// The result is validated structurally (Validate with a nil registry); errors are a
// *ValidationError whose problems carry "name:line:col" positions.
//
// The format, in brief (docs/yaml.md in the repository is the reference of every key):
//
//	id: order                # defaults to name
//	version: 2               # executions record order@2
//	trace: true              # record a trace step per step
//	ttl: 24h                 # time to live: then done with outcome expired
//	rearm_ttl: true          # every event pushes the deadline back
//	initial: idle
//	context:                 # declared keys: type, default, required (see ContextKey)
//	  order_id: {type: string, required: true}
//	  amount: {type: number, default: 0}
//	  note: string           # just the type
//	states:
//	  idle:
//	    defer: [refund]      # event kinds kept until a state that does not defer them is entered
//	    entry: [log]         # a list or a single name
//	    exit: log
//	    on:
//	      go: busy           # event: target
//	      poke:              # or a transition, or a list of them (first passing guard wins)
//	        - {target: busy, guard: ready, actions: [a, b]}
//	        - {actions: [note]}            # targetless
//	    timeout: {after: 30s, target: expired, actions: [x]}
//	    on_error: {target: broken}
//	  busy:
//	    initial: a
//	    history: true        # or shallow; deep re-enters the last active leaf
//	    states: {a: {on: {next: b}}, b: {final: success}}
//	    done: [{outcome: failure, target: broken}, {target: idle}]
//	  both:
//	    parallel: true
//	    early_exit: [failure]
//	    regions: {left: {initial: l, states: {l: {final: success}}}, right: ...}
//	    done: idle
//	  route:                 # a choice point: first passing guard, the last branch the else
//	    choice: [{guard: big, target: review}, {target: busy}]
//	  check:                 # a selector: the action's label picks the case
//	    select: {action: classify, cases: {ok: busy, else: broken}}
//	  pay:                   # runs definition "payment" as a child; fan out with for_each
//	    invoke: {definition: payment, input: {amount: total}}
//	    done: [{outcome: success, target: busy}, {target: broken}]
//	  expired: {final: timeout}
//	  broken: {final: failure}
//	returns: [receipt]       # context keys handed back to an invoking parent
//	retry:                   # retry policies, by action name (see Retry); "retry: none" retries nothing
//	  charge: {attempts: 5, backoff: 1s, factor: 2, max: 1m, jitter: 0.5}
//	  refund: none           # never retried
//	  default: {attempts: 3, backoff: 2s}   # every action not named (else DefaultRetry)
//	schedules:               # timetables that start executions (see Schedule)
//	  sweep: {every: 5m, overlap: skip, context: {region: eu}}
//	limit:                   # per key: steps in flight and started per period (see Limit)
//	  key: context.customer_id
//	  concurrency: 2
//	  rate: 100
//	  per: 1m
func Parse(name string, data []byte) (*Definition, error) {
	return parse(name, name, data)
}

func parse(file, defaultID string, data []byte) (*Definition, error) {
	p := &parser{file: file}
	if len(data) > MaxFileSize {
		p.errf(nil, "file is %d bytes, more than %d", len(data), MaxFileSize)
		return nil, p.err()
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		p.problems = append(p.problems, Problem{Pos: Pos{File: file}, Msg: strings.TrimPrefix(err.Error(), "yaml: ")})
		return nil, p.err()
	}
	def := &Definition{ID: defaultID, Pos: Pos{File: file, Line: 1, Col: 1}}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		p.errf(nil, "empty document")
		return nil, p.err()
	}
	root := doc.Content[0]
	def.Pos = p.pos(root)
	p.mapping(root, func(key string, k, v *yaml.Node) {
		switch key {
		case "id":
			def.ID = p.str(v)
		case "trace":
			def.Trace = p.boolean(v)
		case "version":
			p.whole(v, "version", &def.Version)
		case "initial":
			def.Initial = p.str(v)
		case "states":
			def.States = p.states(v, 1)
		case "retry":
			def.Retry, def.DefaultRetry = p.retries(v)
		case "returns":
			def.Returns = p.names(v)
		case "context":
			def.Context = p.contextKeys(v)
		case "ttl":
			if d, ok := p.duration(v, "ttl", "24h"); ok {
				def.TTL = d
			}
		case "rearm_ttl":
			def.RearmTTL = p.boolean(v)
		case "limit":
			def.Limit = p.limit(k, v)
		case "schedules":
			def.Schedules = p.schedules(v)
		default:
			p.errf(k, "unknown key %q (want id, version, trace, initial, context, ttl, rearm_ttl, states, retry, returns, limit, schedules)", key)
		}
	})
	if len(p.problems) > 0 {
		return nil, p.err()
	}
	if err := Validate(def, nil); err != nil {
		return nil, err
	}
	return def, nil
}

type parser struct {
	file     string
	problems []Problem
}

func (p *parser) err() error { return &ValidationError{Problems: p.problems} }

func (p *parser) pos(n *yaml.Node) Pos {
	if n == nil {
		return Pos{File: p.file}
	}
	return Pos{File: p.file, Line: n.Line, Col: n.Column}
}

func (p *parser) errf(n *yaml.Node, format string, args ...any) {
	p.problems = append(p.problems, Problem{Pos: p.pos(n), Msg: fmt.Sprintf(format, args...)})
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("the scalar %q", n.Value)
	case yaml.AliasNode:
		return "an alias"
	}
	return "nothing"
}

// mapping calls fn for each key of a mapping node, in order, reporting duplicate keys.
func (p *parser) mapping(n *yaml.Node, fn func(key string, k, v *yaml.Node)) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return
	}
	if n.Kind != yaml.MappingNode {
		p.errf(n, "expected a mapping, found %s", kindName(n))
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			p.errf(k, "expected a name as key, found %s", kindName(k))
			continue
		}
		if v.Kind == yaml.AliasNode || k.Kind == yaml.AliasNode {
			p.errf(v, "YAML aliases are not supported")
			continue
		}
		if line, dup := seen[k.Value]; dup {
			p.errf(k, "duplicate key %q (first at line %d)", k.Value, line)
			continue
		}
		seen[k.Value] = k.Line
		fn(k.Value, k, v)
	}
}

func (p *parser) str(n *yaml.Node) string {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.errf(n, "expected a name, found %s", kindName(n))
		return ""
	}
	return n.Value
}

func (p *parser) boolean(n *yaml.Node) bool {
	var b bool
	if n.Kind != yaml.ScalarNode || n.Decode(&b) != nil {
		p.errf(n, "expected true or false, found %s", kindName(n))
	}
	return b
}

// names reads one name or a list of names.
func (p *parser) names(n *yaml.Node) []string {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return nil
		}
		return []string{n.Value}
	case yaml.SequenceNode:
		out := make([]string, 0, len(n.Content))
		for _, c := range n.Content {
			if s := p.str(c); s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	p.errf(n, "expected a name or a list of names, found %s", kindName(n))
	return nil
}

func (p *parser) states(n *yaml.Node, depth int) []*State {
	if depth > MaxDepth {
		p.errf(n, "states nest deeper than %d levels", MaxDepth)
		return nil
	}
	var out []*State
	p.mapping(n, func(name string, k, v *yaml.Node) {
		out = append(out, p.state(name, k, v, depth))
	})
	return out
}

func (p *parser) state(name string, k, v *yaml.Node, depth int) *State {
	s := &State{Name: name, Pos: p.pos(k)}
	p.mapping(v, func(key string, kk, vv *yaml.Node) {
		switch key {
		case "initial":
			s.Initial = p.str(vv)
		case "states":
			s.States = append(s.States, p.states(vv, depth+1)...)
		case "regions":
			s.Parallel = true
			s.States = append(s.States, p.states(vv, depth+1)...)
		case "parallel":
			s.Parallel = p.boolean(vv)
		case "early_exit":
			s.EarlyExit = p.names(vv)
		case "final":
			if vv.Kind == yaml.ScalarNode && (vv.Value == "true" || vv.Tag == "!!null") {
				s.Final = OutcomeSuccess
			} else {
				s.Final = p.str(vv)
			}
		case "history":
			switch {
			case vv.Kind == yaml.ScalarNode && vv.Value == "shallow":
				s.History = true
			case vv.Kind == yaml.ScalarNode && vv.Value == "deep":
				s.DeepHistory = true
			default:
				s.History = p.boolean(vv)
			}
		case "defer":
			s.Defer = p.names(vv)
		case "entry":
			s.Entry = p.names(vv)
		case "exit":
			s.Exit = p.names(vv)
		case "on":
			p.mapping(vv, func(event string, ek, ev *yaml.Node) {
				for _, t := range p.transitions(ev, "target, guard, actions, internal") {
					t.Event = event
					s.On = append(s.On, t)
				}
			})
		case "timeout":
			s.Timeout = p.timeout(vv)
		case "choice":
			if vv.Kind != yaml.SequenceNode {
				p.errf(vv, "choice: expected a list of branches, found %s", kindName(vv))
				return
			}
			s.Choice = p.transitions(vv, "target, guard, actions")
		case "select":
			s.Select = p.selectTable(vv)
		case "invoke":
			s.Invoke = p.invoke(vv)
		case "done":
			s.Done = p.transitions(vv, "target, outcome, guard, actions, internal")
		case "on_error":
			ts := p.transitions(vv, "target, actions")
			switch len(ts) {
			case 0:
			case 1:
				s.OnError = ts[0]
			default:
				p.errf(vv, "on_error takes one transition")
			}
		default:
			p.errf(kk, "unknown key %q in state %q (want initial, states, regions, parallel, early_exit, final, history, defer, entry, exit, on, timeout, choice, select, invoke, done, on_error)", key, name)
		}
	})
	return s
}

// transitions reads a target name, a transition mapping, or a list of either.
func (p *parser) transitions(n *yaml.Node, keys string) []*Transition {
	switch n.Kind {
	case yaml.SequenceNode:
		var out []*Transition
		for _, c := range n.Content {
			if c.Kind == yaml.SequenceNode {
				p.errf(c, "expected a transition, found a list")
				continue
			}
			out = append(out, p.transitions(c, keys)...)
		}
		return out
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return []*Transition{{Pos: p.pos(n)}}
		}
		return []*Transition{{Target: n.Value, Pos: p.pos(n)}}
	case yaml.MappingNode:
		t := &Transition{Pos: p.pos(n)}
		p.mapping(n, func(key string, k, v *yaml.Node) {
			if !strings.Contains(", "+keys+",", ", "+key+",") {
				p.errf(k, "unknown key %q in transition (want %s)", key, keys)
				return
			}
			p.transitionKey(t, key, v)
		})
		return []*Transition{t}
	}
	p.errf(n, "expected a transition, found %s", kindName(n))
	return nil
}

func (p *parser) transitionKey(t *Transition, key string, v *yaml.Node) {
	switch key {
	case "target":
		t.Target = p.str(v)
	case "guard":
		t.Guard = p.str(v)
	case "actions":
		t.Actions = p.names(v)
	case "internal":
		t.Internal = p.boolean(v)
	case "outcome":
		t.Outcome = p.str(v)
	}
}

func (p *parser) timeout(n *yaml.Node) *Timeout {
	to := &Timeout{Transition: Transition{Pos: p.pos(n)}}
	hasAfter := false
	p.mapping(n, func(key string, k, v *yaml.Node) {
		switch key {
		case "after":
			hasAfter = true
			s := p.str(v)
			if s == "" {
				return
			}
			if d, ok := p.duration(v, "timeout after", "30s or 5m"); ok {
				to.After = d
			}
		case "target", "guard", "actions", "internal":
			p.transitionKey(&to.Transition, key, v)
		default:
			p.errf(k, "unknown key %q in timeout (want after, target, guard, actions, internal)", key)
		}
	})
	if !hasAfter && n.Kind == yaml.MappingNode {
		p.errf(n, "timeout needs after: <duration>")
	}
	return to
}

// schedules parses the schedules block: declarations by id.
func (p *parser) schedules(n *yaml.Node) []*Schedule {
	var out []*Schedule
	p.mapping(n, func(id string, k, v *yaml.Node) {
		sc := &Schedule{ID: id, Pos: p.pos(k)}
		p.mapping(v, func(key string, kk, vv *yaml.Node) {
			switch key {
			case "cron":
				sc.Cron = p.str(vv)
			case "zone":
				sc.Zone = p.str(vv)
			case "overlap":
				sc.Overlap = p.str(vv)
			case "catch_up":
				sc.CatchUp = p.str(vv)
			case "every", "jitter", "window":
				d, ok := p.duration(vv, "schedule "+key, "30s or 5m")
				if !ok {
					return
				}
				switch key {
				case "every":
					sc.Every = d
				case "jitter":
					sc.Jitter = d
				default:
					sc.Window = d
				}
			case "context":
				sc.Context = p.json(vv, fmt.Sprintf("context of schedule %q", id))
			default:
				p.errf(kk, "unknown key %q in schedule %q (want cron, zone, every, jitter, overlap, catch_up, window, context)", key, id)
			}
		})
		out = append(out, sc)
	})
	return out
}

// limit parses the limit block.
func (p *parser) limit(k, n *yaml.Node) *Limit {
	l := &Limit{Pos: p.pos(k)}
	p.mapping(n, func(key string, kk, vv *yaml.Node) {
		switch key {
		case "key":
			l.Key = p.str(vv)
		case "concurrency":
			p.whole(vv, "limit concurrency", &l.Concurrency)
		case "rate":
			p.whole(vv, "limit rate", &l.Rate)
		case "per":
			if d, ok := p.duration(vv, "limit per", "1s or 1m"); ok {
				l.Per = d
			}
		default:
			p.errf(kk, "unknown key %q in limit (want key, concurrency, rate, per)", key)
		}
	})
	return l
}

// retries parses the retry block: "none" (no action is retried), or policies by action name,
// each a mapping or "none", and under "default" the policy of the actions it does not name.
func (p *parser) retries(n *yaml.Node) (map[string]*Retry, *Retry) {
	if n.Kind == yaml.ScalarNode && n.Value == "none" {
		r := NoRetry()
		r.Pos = p.pos(n)
		return nil, r
	}
	out := map[string]*Retry{}
	var def *Retry
	p.mapping(n, func(action string, k, v *yaml.Node) {
		r := p.retry(k, v)
		if action == "default" {
			def = r
			return
		}
		out[action] = r
	})
	if len(out) == 0 {
		return nil, def
	}
	return out, def
}

// retry parses one policy: a mapping, or "none".
func (p *parser) retry(k, v *yaml.Node) *Retry {
	r := &Retry{Pos: p.pos(k)}
	if v.Kind == yaml.ScalarNode && v.Value == "none" {
		r.Attempts = 1
		return r
	}
	p.mapping(v, func(key string, kk, vv *yaml.Node) {
		switch key {
		case "attempts":
			p.whole(vv, "retry attempts", &r.Attempts)
		case "backoff", "max":
			d, ok := p.duration(vv, "retry "+key, "1s or 5m")
			if !ok {
				return
			}
			if key == "backoff" {
				r.Backoff = d
			} else {
				r.Max = d
			}
		case "factor", "jitter":
			var f float64
			if vv.Kind != yaml.ScalarNode || vv.Decode(&f) != nil {
				p.errf(vv, "retry %s: expected a number, found %s", key, kindName(vv))
				return
			}
			if key == "factor" {
				r.Factor = f
			} else {
				r.Jitter = f
			}
		default:
			p.errf(kk, "unknown key %q in retry policy (want attempts, backoff, factor, max, jitter, or none)", key)
		}
	})
	return r
}

func (p *parser) selectTable(n *yaml.Node) *Select {
	sel := &Select{Pos: p.pos(n)}
	p.mapping(n, func(key string, k, v *yaml.Node) {
		switch key {
		case "action":
			sel.Action = p.str(v)
		case "cases":
			p.mapping(v, func(label string, lk, lv *yaml.Node) {
				ts := p.transitions(lv, "target, actions")
				if len(ts) != 1 {
					p.errf(lv, "case %q takes one transition", label)
					return
				}
				sel.Cases = append(sel.Cases, &Case{Label: label, Transition: *ts[0]})
			})
		default:
			p.errf(k, "unknown key %q in select (want action, cases)", key)
		}
	})
	return sel
}

func (p *parser) invoke(n *yaml.Node) *Invoke {
	inv := &Invoke{Pos: p.pos(n)}
	p.mapping(n, func(key string, k, v *yaml.Node) {
		switch key {
		case "definition":
			inv.Definition = p.str(v)
		case "input":
			inv.Input = map[string]string{}
			p.mapping(v, func(child string, _, pv *yaml.Node) { inv.Input[child] = p.str(pv) })
		case "for_each":
			inv.ForEach = p.str(v)
		case "as":
			inv.As = p.str(v)
		case "results":
			inv.Results = p.str(v)
		case "fail_fast":
			inv.FailFast = p.boolean(v)
		default:
			p.errf(k, "unknown key %q in invoke (want definition, input, for_each, as, results, fail_fast)", key)
		}
	})
	return inv
}

func (p *parser) contextKeys(n *yaml.Node) []*ContextKey {
	var out []*ContextKey
	p.mapping(n, func(name string, k, v *yaml.Node) {
		ck := &ContextKey{Name: name, Pos: p.pos(k)}
		if v.Kind == yaml.ScalarNode {
			ck.Type = p.str(v)
			out = append(out, ck)
			return
		}
		p.mapping(v, func(key string, kk, vv *yaml.Node) {
			switch key {
			case "type":
				ck.Type = p.str(vv)
			case "required":
				ck.Required = p.boolean(vv)
			case "default":
				ck.Default = p.json(vv, fmt.Sprintf("default of context key %q", name))
			default:
				p.errf(kk, "unknown key %q in context key %q (want type, default, required)", key, name)
			}
		})
		out = append(out, ck)
	})
	return out
}

// json is the YAML value n as JSON, or nil after reporting what (its name in the message) when n
// holds what JSON cannot.
func (p *parser) json(n *yaml.Node, what string) json.RawMessage {
	var val any
	if err := n.Decode(&val); err != nil {
		p.errf(n, "%s: %v", what, err)
		return nil
	}
	raw, err := json.Marshal(val)
	if err != nil {
		p.errf(n, "%s is not JSON: %v", what, err)
		return nil
	}
	return raw
}

// duration reads n as a Go duration, and reports it (what names it, like gives examples) when it
// is not one.
func (p *parser) duration(n *yaml.Node, what, like string) (time.Duration, bool) {
	d, err := time.ParseDuration(p.str(n))
	if err != nil {
		p.errf(n, "%s %q is not a duration like %s", what, n.Value, like)
		return 0, false
	}
	return d, true
}

// whole reads n as a whole number into dst, and reports it (what names it) when it is not one.
func (p *parser) whole(n *yaml.Node, what string, dst *int) {
	if n.Kind != yaml.ScalarNode || n.Decode(dst) != nil {
		p.errf(n, "%s: expected a whole number, found %s", what, kindName(n))
	}
}
