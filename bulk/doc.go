// Package bulk runs an operation over many executions as a durable job: cancel, suspend,
// resume, retry, reset, set-state, send an event or purge, over a listing filter
// (stead.ListFilter), with a dry-run count, a rate limit, progress (done, refused with reasons,
// remaining), pause, resume and cancel of the job itself, and resumption by any worker after a
// crash with nothing applied twice.
//
// A job is an execution of the built-in definition DefinitionID, run by the Machine this package
// provides (Register adds it to a worker's machines). So every backend stores it without a table
// of its own, any worker resumes it after a crash, stead.Store.List and Load show it, and the
// operator's suspend, resume and cancel commands (worker.Client.Control; Pause, Resume and Cancel
// here) pause and end it. Its context holds the spec, the listing cursor and the progress.
//
// Each step lists one page of targets after the cursor and applies the operation to each, with
// one command id derived from the job id (CommandID): an execution applies a command id at most
// once, so when a step's commit is lost (the worker was killed, the job was paused at that very
// moment) and the page is applied again, what the first run applied changes nothing and counts
// as done. The step commits the new cursor and progress together with what asks for the next
// page: an event to the job itself, or, for a rate-limited job, a durable timer that fires when
// the page's share of the rate has passed.
//
//	machines := worker.Machines{"order": orderEngine}
//	bulk.Register(machines, store, tr, bulk.Options{})        // the workers run jobs too
//	client := &worker.Client{Store: store, Transport: tr, Known: machines}
//	est, err := bulk.DryRun(ctx, store, spec)                 // how many, by status; writes nothing
//	job, err := bulk.Start(ctx, client, bulk.Spec{Op: bulk.OpCancel, Rate: 500,
//		Filter: stead.ListFilter{DefinitionID: "order", Statuses: []stead.Status{stead.StatusRunning}, RootsOnly: true}})
//	job, err = bulk.Get(ctx, store, job.ID)                   // job.Progress.Done, Refused, Remaining
package bulk
