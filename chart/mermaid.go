package chart

import (
	"fmt"
	"slices"
	"strings"
)

// Mermaid renders the definition as a Mermaid state diagram (stateDiagram-v2). States get
// generated ids (s0, s1, ...) labelled with their names, so equal names in different
// compound states never collide. Each path in active is highlighted together with its
// ancestors (pass an execution's ActivePath, and its children's for a parallel state).
func (d *Definition) Mermaid(active ...string) string {
	m := mermaid{ids: map[string]string{}, edges: map[string][]string{}, retry: d.Retry}
	d.Walk(func(path string, _ *State) { m.ids[path] = fmt.Sprintf("s%d", len(m.ids)) })
	d.Walk(func(path string, s *State) { m.collect(path, s) })
	hot := map[string]bool{}
	for _, p := range active {
		for ; p != ""; p = parentPath(p) {
			hot[p] = true
		}
	}
	m.b.WriteString("stateDiagram-v2\n")
	if id, ok := m.ids[d.Initial]; ok {
		if d.TTL > 0 {
			rearm := ""
			if d.RearmTTL {
				rearm = ", rearmed"
			}
			fmt.Fprintf(&m.b, "  [*] --> %s : %s\n", id, label("ttl "+d.TTL.String()+rearm))
		} else {
			fmt.Fprintf(&m.b, "  [*] --> %s\n", id)
		}
	}
	m.states("", d.States, 1)
	m.writeEdges("", 1)
	if len(hot) > 0 {
		m.b.WriteString("  classDef active fill:#f9d77e,stroke:#b8860b,stroke-width:2px\n")
		var hs []string
		for p := range hot {
			if id, ok := m.ids[p]; ok {
				hs = append(hs, id)
			}
		}
		slices.Sort(hs)
		for _, id := range hs {
			fmt.Fprintf(&m.b, "  class %s active\n", id)
		}
	}
	return m.b.String()
}

type mermaid struct {
	retry map[string]*Retry
	b     strings.Builder
	ids   map[string]string
	edges map[string][]string // by the path of the composite whose block draws them
}

func (m *mermaid) states(prefix string, states []*State, depth int) {
	ind := strings.Repeat("  ", depth)
	for _, s := range states {
		if s == nil {
			continue
		}
		path := joinPath(prefix, s.Name)
		id := m.ids[path]
		name := s.Name
		switch {
		case s.History:
			name += " (H)"
		case s.DeepHistory:
			name += " (H*)"
		}
		if inv := s.Invoke; inv != nil {
			name += " ⇒ " + inv.Definition
			if inv.ForEach != "" {
				name += " for each " + inv.ForEach
			}
		}
		if len(s.Choice) > 0 {
			// Mermaid draws a choice as a diamond, which has no label.
			fmt.Fprintf(&m.b, "%sstate %s <<choice>>\n", ind, id)
			continue
		}
		fmt.Fprintf(&m.b, "%sstate \"%s\" as %s\n", ind, label(name), id)
		m.notes(ind, id, s)
		if len(s.States) == 0 {
			if s.IsFinal() {
				fmt.Fprintf(&m.b, "%s%s --> [*] : %s\n", ind, id, label(s.Final))
			}
			continue
		}
		fmt.Fprintf(&m.b, "%sstate %s {\n", ind, id)
		if s.Parallel {
			for i, r := range s.States {
				if i > 0 {
					fmt.Fprintf(&m.b, "%s  --\n", ind)
				}
				m.states(path, []*State{r}, depth+1)
			}
		} else {
			if c, ok := m.ids[joinPath(path, s.Initial)]; ok {
				fmt.Fprintf(&m.b, "%s  [*] --> %s\n", ind, c)
			}
			m.states(path, s.States, depth+1)
			m.writeEdges(path, depth+1)
		}
		fmt.Fprintf(&m.b, "%s}\n", ind)
	}
}

func (m *mermaid) writeEdges(scope string, depth int) {
	ind := strings.Repeat("  ", depth)
	for _, e := range m.edges[scope] {
		m.b.WriteString(ind)
		m.b.WriteString(e)
		m.b.WriteByte('\n')
	}
}

// collect files each transition of s under the deepest composite that contains both ends, since
// Mermaid cannot draw an edge between states of different composites. An end nested deeper is
// drawn from (or to) its ancestor in that composite, and the label names the real end.
func (m *mermaid) collect(path string, s *State) {
	edge := func(t *Transition, text string) {
		if t == nil || t.Target == "" {
			return
		}
		target := resolveTarget(m.ids, path, t.Target)
		if target == "" {
			return
		}
		if t.Guard != "" {
			text += " [" + t.Guard + "]"
		}
		if len(t.Actions) > 0 {
			text += " / " + m.actions(t.Actions)
		}
		scope := parentPath(path)
		for scope != "" && !strings.HasPrefix(target, scope+".") {
			scope = parentPath(scope)
		}
		from, to := lift(scope, path), lift(scope, target)
		if from != path {
			text += " (from " + path[len(from)+1:] + ")"
		}
		if to != target {
			text += " (to " + target[len(to)+1:] + ")"
		}
		m.edges[scope] = append(m.edges[scope], fmt.Sprintf("%s --> %s : %s", m.ids[from], m.ids[to], label(text)))
	}
	for _, t := range s.On {
		edge(t, t.Event)
	}
	if s.Timeout != nil {
		edge(&s.Timeout.Transition, "after "+s.Timeout.After.String())
	}
	for _, t := range s.Done {
		text := "done"
		if t.Outcome != "" {
			text += " (" + t.Outcome + ")"
		}
		edge(t, text)
	}
	for _, t := range s.Choice {
		if t != nil && t.Guard == "" {
			edge(t, "else")
		} else {
			edge(t, "choice")
		}
	}
	if sel := s.Select; sel != nil {
		for _, c := range sel.Cases {
			if c != nil {
				edge(&c.Transition, sel.Action+" = "+c.Label)
			}
		}
	}
	edge(s.OnError, "error")
}

// actions lists action names, each with its retry policy's attempts.
func (m *mermaid) actions(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = n
		if r := m.retry[n]; r != nil {
			out[i] += fmt.Sprintf(" (retry ×%d)", r.Attempts)
		}
	}
	return strings.Join(out, ", ")
}

// notes draws a note beside a state that defers events, or whose entry or exit runs an action
// with a retry policy, since Mermaid has no place for either otherwise.
func (m *mermaid) notes(ind, id string, s *State) {
	var parts []string
	for _, x := range []struct {
		what  string
		names []string
	}{{"entry", s.Entry}, {"exit", s.Exit}} {
		for _, n := range x.names {
			if m.retry[n] != nil {
				parts = append(parts, x.what+" / "+m.actions(x.names))
				break
			}
		}
	}
	if len(s.Defer) > 0 {
		parts = append(parts, "defer "+strings.Join(s.Defer, ", "))
	}
	if len(parts) > 0 {
		fmt.Fprintf(&m.b, "%snote right of %s : %s\n", ind, id, label(strings.Join(parts, ", ")))
	}
}

// lift returns the ancestor-or-self of path that is a direct child of scope.
func lift(scope, path string) string {
	rest := path
	if scope != "" {
		rest = path[len(scope)+1:]
	}
	if i := strings.IndexByte(rest, '.'); i >= 0 {
		return path[:len(path)-len(rest)+i]
	}
	return path
}

// label keeps text from breaking Mermaid's syntax.
func label(s string) string {
	return strings.NewReplacer("\"", "'", "\n", " ", ":", "#58;", ";", "#59;").Replace(s)
}
