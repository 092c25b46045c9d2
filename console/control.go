package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/steadhq/stead"

	"github.com/steadhq/stead/worker"
)

// handleControl applies a button: suspend, resume, cancel or retry of one execution. It needs a
// same-origin request with the CSRF token of its cookie, and is refused with 403 in read-only
// mode. A status that does not take the command is a 409 page with the reason.
func (s *Server) handleControl(w http.ResponseWriter, r *http.Request) {
	if s.cfg.ReadOnly {
		http.Error(w, "forbidden: the console is read-only", http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if !s.csrfOK(r) {
		http.Error(w, "forbidden: missing or bad CSRF token, or a cross-site request", http.StatusForbidden)
		return
	}
	id, op := r.PostFormValue("id"), worker.Op(r.PostFormValue("op"))
	if id == "" {
		s.fail(w, r, badRequestf("no execution id"))
		return
	}
	if !slices.Contains(controlOps, op) {
		s.fail(w, r, badRequestf("unknown command %q: want suspend, resume, cancel or retry", op))
		return
	}
	if op == worker.OpRetry {
		// Retry runs the definition's actions: say so before the controller refuses it in
		// its own terms.
		exe, err := s.cfg.Store.Load(r.Context(), id)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if !s.canRun(exe.DefinitionID) {
			s.fail(w, r, refusal{noMachine(exe.DefinitionID, "retry "+strconv.Quote(id))})
			return
		}
	}
	out, err := s.cfg.Control.Control(r.Context(), id, worker.Command{Op: op})
	if err != nil {
		var se *stead.StatusError
		if errors.Is(err, stead.ErrInvalid) && !errors.As(err, &se) {
			// The controller refused the command itself (not the store a request): its reason
			// is the operator's to read.
			err = refusal{fmt.Sprintf("%s %q was refused: %s", op, id, plain(err))}
		}
		s.fail(w, r, err)
		return
	}
	s.log.Info("console: command", "op", op, "execution", id, "command_id", out.CommandID, "status", out.Status)
	http.Redirect(w, r, s.path("/execution")+"?"+url.Values{"id": {id}}.Encode(), http.StatusSeeOther)
}

// canRun reports whether this console can run executions of definitionID (retry needs its
// actions). Without Machines and with a controller of the caller's, the controller decides.
func (s *Server) canRun(definitionID string) bool {
	if s.cfg.Machines == nil && s.ownControl {
		return true
	}
	return s.cfg.Machines[definitionID] != nil
}

// noMachine says why the console cannot do what, for executions of definitionID.
func noMachine(definitionID, what string) string {
	return fmt.Sprintf("This console does not have the actions of definition %q, so it cannot %s: retry applies the failed event again, "+
		"which runs the definition's actions. Retry it with a stead binary built with them (cli.Main), or serve the console from "+
		"your own program (console.New with its Machines). Suspend, resume and cancel work here.", definitionID, what)
}

// refusal is a command the console or its controller refused, in words for the operator: shown
// as it is, with 409.
type refusal struct{ msg string }

func (r refusal) Error() string { return r.msg }

// plain is an error's text without the library's package prefixes, which say nothing to an
// operator.
func plain(err error) string {
	parts := strings.Split(strings.Join(strings.Fields(err.Error()), " "), ": ")
	out := parts[:0]
	for _, p := range parts {
		switch p {
		case "stead", "chart", "worker", "invalid input":
			continue
		}
		out = append(out, p)
	}
	return strings.Join(out, ": ")
}
