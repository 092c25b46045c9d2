// Package mapstore is an execution store written the way a third party would write one: in its
// own module, importing only the public API of stead (no internal package), and proven by the same
// conformance suite as the bundled backends (storetest.Run, in mapstore_test.go).
//
// It keeps everything in Go maps behind one mutex. It is small on purpose: the stead.Store in
// front of it checks and normalises every argument, builds listing cursors and owns Close, so a
// backend only stores and finds rows. Read it as the walk-through of stead.Backend; use memstore
// for tests and sqlitestore or pgstore in production.
package mapstore
