package worker

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoOpenTelemetry holds package worker to knowing only its Observer: the OpenTelemetry code is
// otelstead's, and a program without telemetry builds none of it.
func TestNoOpenTelemetry(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.Contains(p, "opentelemetry") {
			t.Errorf("package worker depends on %s", p)
		}
	}
}
