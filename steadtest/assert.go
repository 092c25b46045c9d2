package steadtest

import (
	"encoding/json"
	"reflect"

	"github.com/steadhq/stead"
)

// AssertState fails the test unless execution id is in state path (its active leaf is path or
// inside it).
func (k *Kit) AssertState(id, path string) {
	k.tb.Helper()
	if exe := k.Execution(id); !within(exe.ActivePath, path) {
		k.tb.Errorf("steadtest: execution %q: want state %s; %s", id, path, k.describe(exe))
	}
}

// AssertStatus fails the test unless execution id has status s.
func (k *Kit) AssertStatus(id string, s stead.Status) {
	k.tb.Helper()
	if exe := k.Execution(id); exe.Status != s {
		k.tb.Errorf("steadtest: execution %q: want status %s; %s", id, s, k.describe(exe))
	}
}

// AssertContext fails the test unless the context key of execution id holds want, compared as
// JSON (so 3 and 3.0 are equal, and a struct equals the object it encodes to).
func (k *Kit) AssertContext(id, key string, want any) {
	k.tb.Helper()
	got, ok := k.Value(id, key)
	if !ok {
		k.tb.Errorf("steadtest: execution %q: context key %q is not set", id, key)
		return
	}
	raw, err := json.Marshal(want)
	if err != nil {
		k.tb.Fatalf("steadtest: encode the wanted %q: %v", key, err)
	}
	var w any
	if err := json.Unmarshal(raw, &w); err != nil {
		k.tb.Fatalf("steadtest: decode the wanted %q: %v", key, err)
	}
	if !reflect.DeepEqual(got, w) {
		k.tb.Errorf("steadtest: execution %q: context key %q is %v, want %v", id, key, got, w)
	}
}

// AssertCalls fails the test unless action ran n times (counting failed attempts).
func (k *Kit) AssertCalls(action string, n int) {
	k.tb.Helper()
	if calls := k.Calls(action); len(calls) != n {
		keys := make([]string, len(calls))
		for i, c := range calls {
			keys[i] = c.Key
		}
		k.tb.Errorf("steadtest: action %s ran %d times (keys %v), want %d", action, len(calls), keys, n)
	}
}

// AssertEmitted fails the test unless the steps of execution from (every execution when it is
// empty) emitted n events of kind.
func (k *Kit) AssertEmitted(from, kind string, n int) {
	k.tb.Helper()
	var got []string
	count := 0
	for _, e := range k.Emitted(from) {
		got = append(got, e.Event.Kind+"->"+or(e.Target, "(broadcast)"))
		if e.Event.Kind == kind {
			count++
		}
	}
	if count != n {
		k.tb.Errorf("steadtest: %s emitted %d %s events, want %d; it emitted %v", or(from, "the kit"), count, kind, n, got)
	}
}
