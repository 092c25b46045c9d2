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
	ids := map[string]string{}
	d.Walk(func(path string, _ *State) { ids[path] = fmt.Sprintf("s%d", len(ids)) })
	hot := map[string]bool{}
	for _, p := range active {
		for ; p != ""; p = parentPath(p) {
			hot[p] = true
		}
	}
	var b strings.Builder
	b.WriteString("stateDiagram-v2\n")
	m := mermaid{b: &b, ids: ids}
	if d.Initial != "" {
		if id, ok := ids[d.Initial]; ok {
			fmt.Fprintf(&b, "  [*] --> %s\n", id)
		}
	}
	m.states("", d.States, 1)
	d.Walk(func(path string, s *State) { m.edges(path, s) })
	if len(hot) > 0 {
		b.WriteString("  classDef active fill:#f9d77e,stroke:#b8860b,stroke-width:2px\n")
		var hs []string
		for p := range hot {
			if id, ok := ids[p]; ok {
				hs = append(hs, id)
			}
		}
		slices.Sort(hs)
		for _, id := range hs {
			fmt.Fprintf(&b, "  class %s active\n", id)
		}
	}
	return b.String()
}

type mermaid struct {
	b   *strings.Builder
	ids map[string]string
}

func (m mermaid) states(prefix string, states []*State, depth int) {
	ind := strings.Repeat("  ", depth)
	for _, s := range states {
		if s == nil {
			continue
		}
		path := joinPath(prefix, s.Name)
		id := m.ids[path]
		fmt.Fprintf(m.b, "%sstate \"%s\" as %s\n", ind, label(s.Name), id)
		if len(s.States) == 0 {
			if s.IsFinal() {
				fmt.Fprintf(m.b, "%s%s --> [*] : %s\n", ind, id, label(s.Final))
			}
			continue
		}
		fmt.Fprintf(m.b, "%sstate %s {\n", ind, id)
		if s.Parallel {
			for i, r := range s.States {
				if i > 0 {
					fmt.Fprintf(m.b, "%s  --\n", ind)
				}
				m.states(path, []*State{r}, depth+1)
			}
		} else {
			if c, ok := m.ids[joinPath(path, s.Initial)]; ok {
				fmt.Fprintf(m.b, "%s  [*] --> %s\n", ind, c)
			}
			m.states(path, s.States, depth+1)
		}
		fmt.Fprintf(m.b, "%s}\n", ind)
	}
}

func (m mermaid) edges(path string, s *State) {
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
			text += " / " + strings.Join(t.Actions, ", ")
		}
		fmt.Fprintf(m.b, "  %s --> %s : %s\n", m.ids[path], m.ids[target], label(text))
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
	edge(s.OnError, "error")
}

// label keeps text from breaking Mermaid's syntax.
func label(s string) string {
	return strings.NewReplacer("\"", "'", "\n", " ", ":", "#58;", ";", "#59;").Replace(s)
}
