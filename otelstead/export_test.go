package otelstead

import "github.com/steadhq/stead/worker"

// Counter is the counter machine of the package's own tests, for the external test package's
// benchmarks.
var Counter worker.Machine = counter{}
