package console

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/schedule"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/worker"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Controller applies an operator's command to one execution; *worker.Client is one.
type Controller interface {
	Control(ctx context.Context, id string, cmd worker.Command) (worker.Outcome, error)
}

// Config is what a console shows and how it guards it.
type Config struct {
	// Store is the execution store the console reads (required).
	Store *stead.Store
	// Transport, with Store, makes the control buttons work: a worker.Client over Store,
	// Transport and Machines applies them. Without it (and without Control) the console is
	// read-only.
	Transport *transport.Transport
	// Machines are the definitions this console can run, by versioned id, as a worker's: retry
	// applies an execution's failed event again, which runs its definition's actions, so it is
	// offered only for executions of these. Their charts are drawn.
	Machines worker.Machines
	// Control applies the control buttons instead of the client built from Transport (a
	// *worker.Client is one). With Control and no Machines, retry is offered for every failed
	// root and the controller decides.
	Control Controller
	// Definitions draw more charts, by versioned id: those of definitions this console shows
	// but cannot run (it lacks their actions). An execution of a definition neither here nor in
	// Machines is shown without its chart.
	Definitions map[string]*chart.Definition
	// Turns, when set, adds the turn store's pages: an account's conversations, a conversation's
	// open cards and turns, and a turn with its phase, cards, journal, outbox rows and events.
	// They only read (turn.Stores.ReadOnly gives the view).
	Turns *turn.ReadOnlyStores
	// Prefix is the path the console is mounted under, such as "/stead": its links and
	// redirects carry it, and it serves the requests under it (mount it with
	// mux.Handle("/stead/", c)). Empty: the root.
	Prefix string
	// Token, when set, is required of every request: "Authorization: Bearer <token>", or the
	// cookie the login form sets.
	Token string
	// ReadOnly hides the control buttons and refuses their POSTs with 403.
	ReadOnly bool
	// Poll is how often an open live view reads its execution (default DefaultPoll).
	Poll time.Duration
	// Logger receives the errors pages do not show (default: discard).
	Logger *slog.Logger
}

// DefaultPoll is how often a watched execution is read when Config.Poll is zero: modest, since
// every watched execution costs one Load per interval whatever the number of its viewers.
const DefaultPoll = time.Second

// Server is the console's http.Handler. Close it to end the live streams, whose connections
// http.Server.Shutdown would otherwise wait for.
type Server struct {
	cfg     Config
	mux     *http.ServeMux
	tmpl    *template.Template
	secret  []byte // per process: CSRF tokens and the session cookie are keyed with it
	session string // the session cookie's value when a token is set
	hub     *hub
	log     *slog.Logger
	// sched is the store's schedules, nil when its backend keeps none.
	sched *schedule.Store
	// ownControl: Config.Control was the caller's, not a client over Config.Machines.
	ownControl bool

	done      chan struct{}
	closeOnce sync.Once
}

// New returns the console for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, fmt.Errorf("console: %w: no store", stead.ErrInvalid)
	}
	ownControl := cfg.Control != nil
	if cfg.Control == nil && cfg.Transport != nil {
		cfg.Control = &worker.Client{Store: cfg.Store, Transport: cfg.Transport, Known: cfg.Machines, Logger: cfg.Logger}
	}
	// The charts of the machines that carry their definition, beside those given to draw only.
	defs := make(map[string]*chart.Definition, len(cfg.Definitions)+len(cfg.Machines))
	maps.Copy(defs, cfg.Definitions)
	for id, m := range cfg.Machines {
		if d, ok := m.(interface{ Definition() *chart.Definition }); ok && d.Definition() != nil {
			defs[id] = d.Definition()
		}
	}
	cfg.Definitions = defs
	if cfg.Control == nil {
		cfg.ReadOnly = true
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.Turns != nil {
		if err := cfg.Turns.Check(); err != nil {
			return nil, fmt.Errorf("console: %w: turn store: %v", stead.ErrInvalid, err)
		}
	}
	cfg.Prefix = strings.TrimSuffix(cfg.Prefix, "/")
	if cfg.Prefix != "" && (!strings.HasPrefix(cfg.Prefix, "/") || strings.ContainsAny(cfg.Prefix, "?#\"") || path.Clean(cfg.Prefix) != cfg.Prefix) {
		return nil, fmt.Errorf("console: %w: prefix %q: want a clean absolute path such as /stead", stead.ErrInvalid, cfg.Prefix)
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), log: cfg.Logger, done: make(chan struct{}), ownControl: ownControl}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.secret = make([]byte, 32)
	rand.Read(s.secret)
	if cfg.Token != "" {
		s.session = s.mac("session", cfg.Token)
	}
	var err error
	s.tmpl, err = template.New("").Funcs(funcs).Funcs(template.FuncMap{"path": s.path}).ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("console: templates: %w", err)
	}
	s.hub = newHub(cfg.Store, cfg.Poll, s.log)
	if sc, err := schedule.For(cfg.Store); err == nil {
		s.sched = sc
	}
	static, _ := fs.Sub(staticFS, "static")
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", cacheStatic(http.FileServerFS(static))))
	s.mux.HandleFunc("GET /{$}", s.handleList)
	s.mux.HandleFunc("GET /execution", s.handleExecution)
	s.mux.HandleFunc("GET /events", s.handleEvents)
	s.mux.HandleFunc("POST /control", s.handleControl)
	s.mux.HandleFunc("GET /bulk", s.handleBulkConfirm)
	s.mux.HandleFunc("POST /bulk", s.handleBulkStart)
	s.mux.HandleFunc("GET /schedules", s.handleSchedules)
	s.mux.HandleFunc("GET /schedule", s.handleSchedule)
	s.mux.HandleFunc("POST /schedule", s.handleScheduleOp)
	if cfg.Turns != nil {
		s.mux.HandleFunc("GET /turns", s.handleTurns)
		s.mux.HandleFunc("GET /turns/conversation", s.handleConversation)
		s.mux.HandleFunc("GET /turns/turn", s.handleTurn)
	}
	s.mux.HandleFunc("GET /login", s.handleLoginPage)
	s.mux.HandleFunc("POST /login", s.handleLogin)
	s.mux.HandleFunc("POST /logout", s.handleLogout)
	return s, nil
}

// Close ends every live stream and stops their pollers; the pages keep working.
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.done) })
	s.hub.close()
}

// ServeHTTP sets the security headers, checks the token and serves the request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; "+
		// mermaid writes a <style> element into every SVG it draws: styles may be inline,
		// scripts never.
		"style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; "+
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	if s.cfg.Prefix != "" {
		rest, ok := strings.CutPrefix(r.URL.Path, s.cfg.Prefix)
		if !ok || (rest != "" && rest[0] != '/') {
			http.NotFound(w, r)
			return
		}
		if rest == "" {
			rest = "/"
		}
		// As http.StripPrefix does: the handlers below see paths from the console's root.
		r2 := new(http.Request)
		*r2 = *r
		r2.URL = new(url.URL)
		*r2.URL = *r.URL
		r2.URL.Path, r2.URL.RawPath = rest, ""
		r = r2
	}
	// The login form and the embedded assets (the console's own code, no data) need no token.
	if !s.authorized(r) && !isLogin(r) && !isStatic(r) {
		if r.Method == http.MethodGet && r.URL.Path != "/events" {
			http.Redirect(w, r, s.path("/login"), http.StatusSeeOther)
			return
		}
		h.Set("WWW-Authenticate", `Bearer realm="stead"`)
		http.Error(w, "a token is required", http.StatusUnauthorized)
		return
	}
	s.mux.ServeHTTP(w, r)
}

func cacheStatic(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=3600")
		next.ServeHTTP(w, r)
	})
}

// mac is the hex HMAC-SHA256 of the parts under the process secret, each part prefixed by its
// purpose so that a token for one use is never valid for another.
func (s *Server) mac(purpose, value string) string {
	m := hmac.New(sha256.New, s.secret)
	m.Write([]byte(purpose))
	m.Write([]byte{0})
	m.Write([]byte(value))
	return hex.EncodeToString(m.Sum(nil))
}

// page is what every template gets.
type page struct {
	Title    string
	Turns    bool // the turn pages are served: show their link
	CSRF     string
	ReadOnly bool
	Login    bool // a token guards the console: show the logout button
	Data     any
}

func (s *Server) page(w http.ResponseWriter, r *http.Request, title string, data any) page {
	return page{Title: title, CSRF: s.csrfToken(w, r), ReadOnly: s.cfg.ReadOnly, Login: s.cfg.Token != "",
		Turns: s.cfg.Turns != nil, Data: data}
}

// render writes the template with status. Templates render into a buffer first, so that a
// failure is a clean 500 and not half a page.
func (s *Server) render(w http.ResponseWriter, status int, name string, p page) {
	var b bytes.Buffer
	if err := s.tmpl.ExecuteTemplate(&b, name, p); err != nil {
		id := requestID()
		s.log.Error("console: template", "template", name, "request_id", id, "err", err)
		http.Error(w, "internal error (request "+id+")", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

// errorPage is what an error shows: a status, a message of the console's own words, and the
// request id its log line carries when the cause is not shown.
type errorPage struct {
	Status    int
	Message   string
	RequestID string
}

// fail answers err with its status: ErrNotFound 404, ErrInvalid 400, anything else 500. A
// store's error text is never shown: it is logged with a request id, which the page shows.
// Only the console's own messages (badRequest) and a command's status refusal are shown as
// they are.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var br badRequest
	var se *stead.StatusError
	e := errorPage{RequestID: requestID()}
	switch {
	case errors.As(err, &br):
		e.Status, e.Message = http.StatusBadRequest, br.msg
	case errors.As(err, &se):
		e.Status, e.Message = http.StatusConflict, plain(se)
	case errors.As(err, new(refusal)):
		e.Status, e.Message = http.StatusConflict, err.Error()
	case errors.Is(err, errNoSchedules):
		e.Status, e.Message = http.StatusNotFound, err.Error()
	case errors.Is(err, stead.ErrNotFound) && r.URL.Path == "/schedule":
		e.Status, e.Message = http.StatusNotFound, "no such schedule"
	case errors.Is(err, stead.ErrInvalid) && (r.URL.Path == "/schedule" || r.URL.Path == "/schedules"):
		e.Status, e.Message = http.StatusBadRequest, "the store refused the request: a schedule id it does not accept, or a cursor it did not produce for this schedule"
	case errors.Is(err, stead.ErrNotFound) && strings.HasPrefix(r.URL.Path, "/turns"):
		e.Status, e.Message = http.StatusNotFound, "no such conversation or turn in that account"
	case errors.Is(err, stead.ErrNotFound):
		e.Status, e.Message = http.StatusNotFound, "no such execution"
	case errors.Is(err, stead.ErrInvalid) && r.URL.Path == "/":
		e.Status, e.Message = http.StatusBadRequest, "the store refused the listing: a cursor from another filter, or one it did not produce, a time window that is empty, or attribute conditions on a store that does not index attributes"
	case errors.Is(err, stead.ErrInvalid):
		e.Status, e.Message = http.StatusBadRequest, "the store refused the request as invalid (the log has the reason under the request id)"
	case errors.Is(err, context.Canceled):
		return // the client went away
	default:
		e.Status, e.Message = http.StatusInternalServerError, "the store failed to answer"
	}
	s.log.Warn("console: request failed", "request_id", e.RequestID, "method", r.Method, "path", r.URL.Path,
		"status", e.Status, "err", err)
	s.render(w, e.Status, "error", s.page(w, r, fmt.Sprintf("%d %s", e.Status, http.StatusText(e.Status)), e))
}

// badRequest is a mistake in the request the console found itself: its text is shown.
type badRequest struct{ msg string }

func (b badRequest) Error() string { return b.msg }

func badRequestf(format string, args ...any) error {
	return badRequest{fmt.Sprintf(format, args...)}
}

func requestID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

var funcs = template.FuncMap{
	"ts": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05.000Z")
	},
	"statusText": http.StatusText,
}

// path is p under the console's prefix: what its links and redirects point at.
func (s *Server) path(p string) string { return s.cfg.Prefix + p }

// cookiePath scopes the console's cookies to its prefix.
func (s *Server) cookiePath() string { return s.cfg.Prefix + "/" }
