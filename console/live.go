package console

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/steadhq/stead"
)

// heartbeat is how often an idle stream sends a comment, so that proxies keep it open and a
// client that went away is noticed at the next write.
const heartbeat = 15 * time.Second

// hub shares one poller per watched execution among every stream open on it: a thousand
// viewers of one execution cost one Load per interval, and a poller stops with its last viewer.
type hub struct {
	store    *stead.Store
	interval time.Duration
	log      *slog.Logger

	mu      sync.Mutex
	watches map[string]*watch
	closed  bool
	wg      sync.WaitGroup // the pollers
}

// maxWatched bounds how many executions are watched at once: each costs a poller that reads the
// store every interval, so streams on ever new ids must not grow that without end.
const maxWatched = 1000

// errBusy refuses a stream on one more execution than maxWatched, or after close.
var errBusy = errors.New("console: too many executions watched at once")

type watch struct {
	subs    map[chan version]struct{}
	cancel  context.CancelFunc
	last    version
	hasLast bool
}

// version is what a stream is told: the execution's version, or that it is gone.
type version struct {
	V    int64
	Gone bool
}

func newHub(st *stead.Store, interval time.Duration, log *slog.Logger) *hub {
	return &hub{store: st, interval: interval, log: log, watches: map[string]*watch{}}
}

// subscribe returns a channel that receives the execution's latest version whenever it changes
// (the latest only: a slow reader skips versions, never falls behind), and the function that
// ends the subscription. The poller starts with the first subscriber and stops with the last.
func (h *hub) subscribe(id string) (<-chan version, func(), error) {
	ch := make(chan version, 1)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, nil, errBusy
	}
	w := h.watches[id]
	if w == nil {
		if len(h.watches) >= maxWatched {
			return nil, nil, errBusy
		}
		ctx, cancel := context.WithCancel(context.Background())
		w = &watch{subs: map[chan version]struct{}{}, cancel: cancel}
		h.watches[id] = w
		h.wg.Add(1)
		go h.poll(ctx, id, w)
	} else if w.hasLast {
		ch <- w.last
	}
	w.subs[ch] = struct{}{}
	return ch, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(w.subs, ch)
		if len(w.subs) == 0 && h.watches[id] == w {
			delete(h.watches, id)
			w.cancel()
		}
	}, nil
}

// poll reads the execution every interval and tells the subscribers when its version changed.
func (h *hub) poll(ctx context.Context, id string, w *watch) {
	defer h.wg.Done()
	t := time.NewTicker(h.interval)
	defer t.Stop()
	for {
		v, err := h.read(ctx, id)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			h.log.Warn("console: live poll", "execution", id, "err", err)
		default:
			h.publish(w, v)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (h *hub) read(ctx context.Context, id string) (version, error) {
	exe, err := h.store.Load(ctx, id)
	if errors.Is(err, stead.ErrNotFound) {
		return version{Gone: true}, nil
	}
	if err != nil {
		return version{}, err
	}
	return version{V: exe.Version}, nil
}

func (h *hub) publish(w *watch, v version) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w.hasLast && w.last == v {
		return
	}
	w.last, w.hasLast = v, true
	for ch := range w.subs {
		select {
		case <-ch: // drop the version the reader has not taken: only the latest matters
		default:
		}
		ch <- v
	}
}

// pollers is how many executions are watched now.
func (h *hub) pollers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.watches)
}

// close stops every poller and waits for them, and refuses new subscriptions; the streams end on
// their own (Server.Close).
func (h *hub) close() {
	h.mu.Lock()
	h.closed = true
	for id, w := range h.watches {
		w.cancel()
		delete(h.watches, id)
	}
	h.mu.Unlock()
	h.wg.Wait()
}

// handleEvents streams the execution's version as server-sent events: an event "version" with
// the version number whenever it changes, "gone" when the execution is purged. The page then
// fetches its new state. The stream ends when the client goes or the console closes.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	if id == "" {
		http.Error(w, "no execution id", http.StatusBadRequest)
		return
	}
	if _, err := s.cfg.Store.Load(r.Context(), id); err != nil {
		var code int
		switch {
		case errors.Is(err, stead.ErrNotFound):
			code = http.StatusNotFound
		case errors.Is(err, stead.ErrInvalid):
			code = http.StatusBadRequest
		default:
			rid := requestID()
			s.log.Warn("console: events", "request_id", rid, "err", err)
			http.Error(w, "the store failed to answer (request "+rid+")", http.StatusInternalServerError)
			return
		}
		http.Error(w, http.StatusText(code), code)
		return
	}
	ch, stop, err := s.hub.subscribe(id)
	if err != nil {
		w.Header().Set("Retry-After", "10")
		http.Error(w, "the console is shutting down, or watches too many executions at once", http.StatusServiceUnavailable)
		return
	}
	defer stop()
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return
	}
	beat := time.NewTicker(heartbeat)
	defer beat.Stop()
	for {
		var err error
		select {
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		case v := <-ch:
			if v.Gone {
				_, err = fmt.Fprint(w, "event: gone\ndata: \n\n")
			} else {
				_, err = fmt.Fprintf(w, "event: version\ndata: %d\n\n", v.V)
			}
		case <-beat.C:
			_, err = fmt.Fprint(w, ": beat\n\n")
		}
		if err == nil {
			err = rc.Flush()
		}
		if err != nil {
			return
		}
	}
}
