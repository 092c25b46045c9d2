package console

import (
	"net/http"
	"net/url"
	"slices"

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
	out, err := s.cfg.Control.Control(r.Context(), id, worker.Command{Op: op})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.log.Info("console: command", "op", op, "execution", id, "command_id", out.CommandID, "status", out.Status)
	http.Redirect(w, r, "/execution?"+url.Values{"id": {id}}.Encode(), http.StatusSeeOther)
}
