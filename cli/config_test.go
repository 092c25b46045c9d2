package cli

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadhq/stead/chart"
)

// testConfig is the stock stead's: the bundled samples with their actions.
func testConfig() Config {
	var defs []*chart.Definition
	for _, load := range []func() (*chart.Definition, error){chart.SampleOrderFlow, chart.SampleDelivery, chart.SampleCarrier} {
		d, err := load()
		if err != nil {
			panic(err)
		}
		defs = append(defs, d)
	}
	reg := chart.RegisterSampleActions(chart.NewRegistry())
	// hold stands for a slow external call: it records when it ran, for the fleet test to check
	// that no two of a customer's ran at once.
	reg.Action("hold", func(c chart.ActionContext) (chart.ActionResult, error) {
		began := time.Now()
		select {
		case <-time.After(40 * time.Millisecond):
		case <-c.Context().Done():
			return chart.ActionResult{}, c.Context().Err()
		}
		c.SetString("began", began.UTC().Format(time.RFC3339Nano))
		c.SetString("ended", time.Now().UTC().Format(time.RFC3339Nano))
		return chart.ActionResult{}, nil
	})
	return Config{Name: "stead", Definitions: defs, Registry: reg}
}

// newStore creates the SQLite store at path with stead migrate and returns path.
func newStore(t *testing.T, path string) string {
	t.Helper()
	if code, out, errOut := cli(t, t.Context(), "migrate", "--store", path); code != 0 {
		t.Fatalf("migrate %s: exit %d: %s %s", path, code, out, errOut)
	}
	return path
}

// approvalConfig is a user's own stead: the approval flow of testdata/approval.yaml with its
// action, open_ticket, which the stock binary lacks. The action fails while *failOpen is true.
func approvalConfig(t *testing.T, failOpen *atomic.Bool) Config {
	t.Helper()
	def, err := chart.LoadFile(approvalFile)
	if err != nil {
		t.Fatal(err)
	}
	reg := chart.NewRegistry().Action("open_ticket", func(c chart.ActionContext) (chart.ActionResult, error) {
		if failOpen != nil && failOpen.Load() {
			return chart.ActionResult{}, errors.New("ticket system unavailable")
		}
		c.SetString("ticket", "T-"+c.Key())
		return chart.ActionResult{}, nil
	})
	return Config{Definitions: []*chart.Definition{def}, Registry: reg}
}

const approvalFile = "testdata/approval.yaml"
