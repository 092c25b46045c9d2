package chart

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/steadhq/stead"
)

func sampleEngine(t tb, opts ...Option) *Engine {
	t.Helper()
	def, err := SampleOrderFlow()
	if err != nil {
		t.Fatal(err)
	}
	eng, err := NewEngine(def, RegisterSampleActions(NewRegistry()), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

func TestSampleOrderFlowOutcomes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		outcome     string
		amount      float64
		wait        time.Duration
		wantStatus  stead.Status
		wantOutcome string
		wantPath    string
		children    map[string]stead.Status // region -> child status
	}{
		{"ok", 120, 0, stead.StatusDone, "success", "shipped",
			map[string]stead.Status{"packing": stead.StatusDone, "invoicing": stead.StatusDone}},
		{"ok", 20000, 0, stead.StatusDone, "declined", "declined", nil},
		{"declined", 120, 0, stead.StatusDone, "declined", "declined", nil},
		{"timeout", 120, 4 * time.Second, stead.StatusRunning, "", "awaiting_payment", nil},
		{"timeout", 120, 5 * time.Second, stead.StatusDone, "expired", "payment_expired", nil},
		{"error", 120, 0, stead.StatusDone, "failure", "payment_failed", nil},
		{"out_of_stock", 120, 0, stead.StatusDone, "refunded", "refunded",
			map[string]stead.Status{"packing": stead.StatusDone}},
		{"crash", 120, 0, stead.StatusDone, "refunded", "refunded",
			map[string]stead.Status{"packing": stead.StatusFailed}},
	}
	for _, tt := range tests {
		t.Run(tt.outcome+"/"+tt.wait.String(), func(t *testing.T) {
			t.Parallel()
			s := newSim(t, sampleEngine(t))
			data, _ := json.Marshal(map[string]any{"order_id": "o1", "amount": tt.amount, "outcome": tt.outcome})
			s.create("o1", string(data))
			s.drain()
			if tt.wait > 0 {
				s.advance(tt.wait)
			}
			exe := s.exes["o1"]
			if exe.Status != tt.wantStatus || exe.Outcome != tt.wantOutcome || exe.ActivePath != tt.wantPath {
				t.Fatalf("got %s/%q at %q (error %q), want %s/%q at %q", exe.Status, exe.Outcome, exe.ActivePath, exe.Error,
					tt.wantStatus, tt.wantOutcome, tt.wantPath)
			}
			for region, want := range tt.children {
				c := s.exes["o1:fulfilment."+region+":0"]
				if c == nil || c.Status != want {
					t.Fatalf("region %s: got %+v, want status %s", region, c, want)
				}
				if c.ParentID != "o1" || c.RootPath != "fulfilment."+region {
					t.Fatalf("region %s: parent %q root %q", region, c.ParentID, c.RootPath)
				}
			}
			if exe.Status.Finished() && len(s.timers) != 0 {
				t.Fatalf("timers left armed: %v", s.timers)
			}
		})
	}
}

func TestSampleShippedCarriesRegionResults(t *testing.T) {
	t.Parallel()
	s := newSim(t, sampleEngine(t))
	s.create("o2", `{"order_id":"o2","amount":50,"outcome":"ok"}`)
	s.drain()
	var ctx struct {
		Captured float64 `json:"captured"`
		Regions  map[string]struct {
			Packed    bool   `json:"packed"`
			InvoiceNo string `json:"invoice_no"`
		} `json:"region_results"`
	}
	if err := json.Unmarshal(s.exes["o2"].Context, &ctx); err != nil {
		t.Fatal(err)
	}
	if ctx.Captured != 50 || !ctx.Regions["packing"].Packed || ctx.Regions["invoicing"].InvoiceNo != "INV-o2" {
		t.Fatalf("context %s", s.exes["o2"].Context)
	}
	// The cancelled sibling of an early exit is reported as such in the parent's join state.
	s.create("o3", `{"order_id":"o3","amount":50,"outcome":"out_of_stock"}`)
	s.drain()
	o3 := s.exes["o3"]
	if c := o3.Children["o3:fulfilment.packing:0"]; !c.Finished || c.Outcome != "failure" {
		t.Fatalf("packing join state %+v", c)
	}
	inv := s.exes["o3:fulfilment.invoicing:0"]
	if inv.Status != stead.StatusCancelled && inv.Status != stead.StatusDone {
		t.Fatalf("invoicing child %s", inv.Status)
	}
}

// The sample delivery invokes the sample carrier, whose booking fails once and is retried.
func TestSampleDelivery(t *testing.T) {
	t.Parallel()
	reg := RegisterSampleActions(NewRegistry())
	var engines []*Engine
	for _, load := range []func() (*Definition, error){SampleDelivery, SampleCarrier} {
		def, err := load()
		if err != nil {
			t.Fatal(err)
		}
		eng, err := NewEngine(def, reg)
		if err != nil {
			t.Fatal(err)
		}
		engines = append(engines, eng)
	}
	s := newSim(t, engines[0])
	s.engines[engines[1].id] = engines[1]
	s.create("d", `{"order_id":"o-1"}`)
	s.drain()
	if c := s.exes["d:booking:0"]; c == nil || c.Timers[RetryTimerPath].IsZero() {
		t.Fatalf("the carrier is not waiting for its retry: %+v", c)
	}
	s.advance(2 * time.Second)
	d := s.exes["d"]
	if d.Status != stead.StatusDone || d.Outcome != OutcomeSuccess || string(d.Context) != `{"attempts":2,"order_id":"o-1","tracking":"TRK-o-1"}` {
		t.Fatalf("%s/%s %s", d.Status, d.Outcome, d.Context)
	}
}
