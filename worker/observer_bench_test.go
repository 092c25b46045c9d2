package worker

import (
	"context"
	"fmt"
	"testing"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/transport"
)

// offWatch is a Worker's watch without an Observer.
var offWatch = newWatch(Config{})

// BenchmarkBatchHooksOff measures the observer hooks of one batch of 64 steps as the step path
// calls them with no Observer: what a worker without telemetry pays for the seam (a nil check a
// hook, no allocation). otelstead's BenchmarkBatchHooks measures the same batch observed.
func BenchmarkBatchHooksOff(b *testing.B) {
	ctx := context.Background()
	obs := offWatch // Config.Observer nil, read as the step path reads it: not a constant
	const n = 64
	leases := make([]transport.Lease, n)
	exes := make([]*stead.Execution, n)
	for i := range leases {
		leases[i].Group, leases[i].Event = fmt.Sprintf("e%03d", i), stead.Event{ID: fmt.Sprintf("ev%d", i), Kind: "tick"}
		exes[i] = &stead.Execution{ID: leases[i].Group, DefinitionID: "counter", Version: 3}
	}
	var bundle stead.Bundle
	b.ReportAllocs()
	for range b.N { // not b.Loop, which keeps the hooks from inlining as they do on the step path
		_, bw := obs.batch(ctx, leases, obs.now(), false)
		for i := range leases {
			bw.loaded(i, exes[i], false, doStep)
			bw.stepped(i, &bundle)
			bw.committed(i, exes[i])
			_ = bw.traceOf(i)
		}
		_, end := obs.store(ctx, "CommitBatch", "stead_executions", n)
		done(end, nil)
		bw.end()
	}
}
