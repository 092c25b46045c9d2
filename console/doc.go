// Package console is stead's web console as an http.Handler, to mount in a server of one's own
// (stead serve is one such server): an execution list over any store with its filters
// (attribute conditions included, in the syntax of the CLI's --where), counts and cursor paging,
// one execution's statechart drawn live with its active states highlighted and its attributes,
// the operator's control buttons, and bulk jobs (package bulk: suspend, resume, cancel, retry,
// send an event, purge) started from the list's filter after a confirmation that shows the dry
// run's count, and the store's schedules (package schedule) with their next and last ticks, each
// with its executions and its pause, resume and trigger-now buttons.
//
// New takes the store, a transport (without one the console is read-only) and the machines it
// may run: a worker.Client over them applies the buttons. Retry applies a failed event again,
// which runs the definition's actions, so it is offered only for the definitions among Machines;
// the charts of the others are drawn from Config.Definitions. A refusal is shown in words, with
// the reason: a status that does not take the command, or a definition whose actions this
// console does not have. Given a turn store (Config.Turns), it shows that too, read-only: an
// account's conversations, and a turn with its cards, journal, outbox rows and events.
//
// It is built from the standard library alone (net/http, html/template) with every asset
// embedded, mermaid's browser bundle included, so it needs no network and no Node. A page is
// rendered on the server; the one script (static/console.js) draws the chart and follows an
// execution through server-sent events: one poller per watched execution, shared by every
// stream open on it, stopped when the last one goes.
//
// Safe by default: pages carry a Content-Security-Policy without inline script and refuse to be
// framed; with a token, every request needs it (a bearer header, or the cookie the login form
// sets); every POST needs a CSRF token bound to a cookie under a per-process secret and a
// same-origin request; read-only mode hides the controls and refuses them with 403. A store's
// error text never reaches a page: it is logged with a request id, and the page shows the id.
// Listen on loopback, or set a token (CheckAddr says which addresses need one), and serve
// HTTPS off the host.
package console
