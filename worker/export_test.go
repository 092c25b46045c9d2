package worker

// Counter is the counter machine of the package's own tests, for the external test package's
// benchmarks.
var Counter Machine = counter{}
