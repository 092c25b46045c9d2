package console

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
)

// stream is one open event stream as a browser's EventSource reads it.
type stream struct {
	t      *testing.T
	cancel context.CancelFunc
	events chan [2]string // event name, data
}

func openStream(t *testing.T, base, id string) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/events?id="+id, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		t.Fatalf("events: status %d, type %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	s := &stream{t: t, cancel: cancel, events: make(chan [2]string, 16)}
	go func() {
		defer res.Body.Close()
		defer close(s.events)
		sc := bufio.NewScanner(res.Body)
		var name, data string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				name = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				data = line[len("data: "):]
			case line == "" && name != "":
				s.events <- [2]string{name, data}
				name, data = "", ""
			}
		}
	}()
	return s
}

// next returns the next event, failing the test if none comes within 5 s.
func (s *stream) next() [2]string {
	s.t.Helper()
	select {
	case ev, ok := <-s.events:
		if !ok {
			s.t.Fatal("the stream ended")
		}
		return ev
	case <-time.After(5 * time.Second):
		s.t.Fatal("no event within 5s")
	}
	return [2]string{}
}

// ended waits for the stream to end.
func (s *stream) ended() bool {
	for {
		select {
		case _, ok := <-s.events:
			if !ok {
				return true
			}
		case <-time.After(5 * time.Second):
			return false
		}
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 5s: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestLiveStreamsShareOnePoller(t *testing.T) {
	baseline := runtime.NumGoroutine()
	f := newFixture(t, Config{})
	ts := httptest.NewServer(f.srv)
	a := openStream(t, ts.URL, "order-1")
	b := openStream(t, ts.URL, "order-1")
	for _, s := range []*stream{a, b} {
		if ev := s.next(); ev != [2]string{"version", "1"} {
			t.Fatalf("first event %v, want version 1", ev)
		}
	}
	if n := f.srv.hub.pollers(); n != 1 {
		t.Errorf("two streams on one execution: %d pollers, want 1", n)
	}
	exe, err := f.store.Load(t.Context(), "order-1")
	if err != nil {
		t.Fatal(err)
	}
	exe.ActivePath = "fulfilment.packing"
	if _, err := f.store.Save(t.Context(), exe); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*stream{a, b} {
		if ev := s.next(); ev != [2]string{"version", "2"} {
			t.Fatalf("after a commit: %v, want version 2", ev)
		}
	}
	a.cancel()
	if !a.ended() {
		t.Fatal("a cancelled stream did not end")
	}
	if n := f.srv.hub.pollers(); n != 1 {
		t.Errorf("one stream left: %d pollers, want 1", n)
	}
	b.cancel()
	b.ended()
	eventually(t, "the poller stops with its last stream", func() bool { return f.srv.hub.pollers() == 0 })

	// A purged execution says so.
	c := openStream(t, ts.URL, "order-3")
	if ev := c.next(); ev[0] != "version" {
		t.Fatalf("first event %v", ev)
	}
	if _, err := f.store.Purge(t.Context(), "order-3", 1); err != nil {
		t.Fatal(err)
	}
	if ev := c.next(); ev[0] != "gone" {
		t.Fatalf("after a purge: %v, want gone", ev)
	}
	c.cancel()
	c.ended()

	ts.Close()
	f.srv.Close()
	http.DefaultClient.CloseIdleConnections()
	eventually(t, "every goroutine of the streams and pollers ends", func() bool {
		return runtime.NumGoroutine() <= baseline
	})
}

func TestCloseEndsStreams(t *testing.T) {
	f := newFixture(t, Config{})
	ts := httptest.NewServer(f.srv)
	defer ts.Close()
	s := openStream(t, ts.URL, "order-1")
	defer s.cancel()
	s.next()
	done := make(chan struct{})
	go func() { f.srv.Close(); close(done) }()
	if !s.ended() {
		t.Fatal("Close did not end the stream")
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	if n := f.srv.hub.pollers(); n != 0 {
		t.Errorf("after Close: %d pollers", n)
	}
	res, err := http.Get(ts.URL + "/events?id=order-1")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a stream after Close: status %d, want 503", res.StatusCode)
	}
	if _, err := f.store.Load(t.Context(), "order-1"); err != nil {
		t.Fatal(err)
	}
}

// TestWatchedExecutionsAreBounded fills the hub to maxWatched and checks that a stream on one
// more execution is refused with 503 while one on a watched execution is still served.
func TestWatchedExecutionsAreBounded(t *testing.T) {
	f := newFixture(t, Config{Poll: time.Hour})
	var stops []func()
	for i := range maxWatched - 1 {
		_, stop, err := f.srv.hub.subscribe(fmt.Sprintf("ghost-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		stops = append(stops, stop)
	}
	ts := httptest.NewServer(f.srv)
	defer ts.Close()
	s := openStream(t, ts.URL, "order-1") // the last one the hub takes
	s.next()
	res, err := http.Get(ts.URL + "/events?id=order-2")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a stream on one execution more: status %d, want 503", res.StatusCode)
	}
	again := openStream(t, ts.URL, "order-1") // an execution already watched shares its poller
	again.next()
	again.cancel()
	s.cancel()
	s.ended()
	again.ended()
	for _, stop := range stops {
		stop()
	}
	eventually(t, "every poller stops", func() bool { return f.srv.hub.pollers() == 0 })
}
