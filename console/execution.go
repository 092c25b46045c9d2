package console

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"slices"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/worker"
)

// maxOutboxShown bounds the pending outbox on an execution's page, and maxChildrenLoaded the
// unfinished children whose status (and active state, for the chart) the page loads.
const (
	maxOutboxShown    = 50
	maxChildrenLoaded = 100
)

// controlOps are the buttons, in the order they are shown. Reset and set-state take arguments an
// operator should type with care; they stay on the command line.
var controlOps = []worker.Op{worker.OpSuspend, worker.OpResume, worker.OpCancel, worker.OpRetry}

type executionPage struct {
	Exe     *stead.Execution
	Context string // pretty JSON
	// Attributes are the execution's attributes by key, each with a link to the executions that
	// share its value.
	Attributes []attrRow
	Mermaid    string // empty when the definition is not known
	Active     []string
	Children   []childLink
	Trace      []stead.TraceStep
	Timers     []stead.Timer
	Outbox     []stead.OutboxEntry
	Dead       *deadLetter
	Ops        []worker.Op // the commands its status takes
	NoRetry    string      // why retry is not offered to a failed root, when the console cannot run it
	Fragment   bool        // only the live part, for the script to swap in
}

// attrRow is one attribute on an execution's page.
type attrRow struct {
	Key, Kind, Value string
	URL              string // the list filtered by key=value
}

type childLink struct {
	ID, Key, RootPath, Status, Outcome string
	Finished                           bool
}

type deadLetter struct {
	stead.DeadLetter
	Data, Context string
}

func (s *Server) handleExecution(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	if id == "" {
		s.fail(w, r, badRequestf("no execution id: want /execution?id=<id>"))
		return
	}
	ep, err := s.execution(r, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if r.URL.Query().Get("fragment") == "1" {
		ep.Fragment = true
		s.render(w, http.StatusOK, "detail", s.page(w, r, "", ep))
		return
	}
	s.render(w, http.StatusOK, "execution", s.page(w, r, id, ep))
}

// execution reads what the execution's page shows.
func (s *Server) execution(r *http.Request, id string) (*executionPage, error) {
	ctx := r.Context()
	st := s.cfg.Store
	exe, err := st.Load(ctx, id)
	if err != nil {
		return nil, err
	}
	ep := &executionPage{Exe: exe, Context: pretty(exe.Context)}
	for _, k := range slices.Sorted(maps.Keys(exe.Attributes)) {
		v := exe.Attributes[k]
		where := stead.Where(k, stead.AttrEq, v).String() // read back by the list's where field
		ep.Attributes = append(ep.Attributes, attrRow{Key: k, Kind: v.Kind().String(), Value: v.String(),
			URL: s.path("/?") + url.Values{"where": {where}}.Encode()})
	}
	if exe.ActivePath != "" {
		ep.Active = append(ep.Active, exe.ActivePath)
	}
	keys := make([]string, 0, len(exe.Children))
	for cid := range exe.Children {
		keys = append(keys, cid)
	}
	slices.Sort(keys)
	for i, cid := range keys {
		c := exe.Children[cid]
		l := childLink{ID: cid, Key: c.Key, RootPath: c.RootPath, Outcome: c.Outcome, Finished: c.Finished}
		if c.Finished {
			l.Status = "finished"
		} else if i >= maxChildrenLoaded {
			l.Status = "unfinished" // not loaded: a page costs at most maxChildrenLoaded loads
		} else if child, err := st.Load(ctx, cid); err == nil {
			l.Status = string(child.Status)
			// A running region child's active state belongs to this execution's chart.
			if child.Status == stead.StatusRunning && child.ActivePath != "" && child.DefinitionID == exe.DefinitionID {
				ep.Active = append(ep.Active, child.ActivePath)
			}
		} else {
			l.Status = "not created yet"
		}
		ep.Children = append(ep.Children, l)
	}
	if def := s.cfg.Definitions[exe.DefinitionID]; def != nil {
		ep.Mermaid = def.Mermaid(ep.Active...)
	}
	if ep.Trace, err = st.ReadTrace(ctx, id); err != nil {
		return nil, err
	}
	// Newest first: the timeline is read from the top while it grows.
	slices.Reverse(ep.Trace)
	if ep.Timers, err = st.Timers(ctx, id); err != nil {
		return nil, err
	}
	if ep.Outbox, err = st.PendingOutbox(ctx, id, maxOutboxShown); err != nil {
		return nil, err
	}
	if exe.DeadLetter != nil {
		ep.Dead = &deadLetter{DeadLetter: *exe.DeadLetter, Data: pretty(exe.DeadLetter.Event.Data), Context: pretty(exe.DeadLetter.Context)}
	}
	if !s.cfg.ReadOnly {
		for _, op := range controlOps {
			// Retry replays a root's dead letter; a failed child is retried through its root.
			if op == worker.OpRetry && exe.ParentID != "" {
				continue
			}
			if worker.CheckCommand(exe, op) != nil {
				continue
			}
			if op == worker.OpRetry && !s.canRun(exe.DefinitionID) {
				ep.NoRetry = noMachine(exe.DefinitionID, "retry this execution")
				continue
			}
			ep.Ops = append(ep.Ops, op)
		}
	}
	return ep, nil
}

// pretty indents a JSON document; what does not parse is shown as it is.
func pretty(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}
