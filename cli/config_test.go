package cli

import (
	"testing"

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
	return Config{Definitions: defs, Registry: chart.RegisterSampleActions(chart.NewRegistry())}
}

// newStore creates the SQLite store at path with stead migrate and returns path.
func newStore(t *testing.T, path string) string {
	t.Helper()
	if code, out, errOut := cli(t, t.Context(), "migrate", "--store", path); code != 0 {
		t.Fatalf("migrate %s: exit %d: %s %s", path, code, out, errOut)
	}
	return path
}
