package stead

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// Strings that exercise every escaping rule of encoding/json.
var trickyStrings = []string{
	"", "a", "plain/path", `quote " and \ backslash`, "<script>&amp;</script>", "tab\tnl\nret\r",
	"\b\f\x01\x1f\x7f", "ünïcødé", "日本語", "emoji 🎉", "line\u2028sep\u2029para", "a\u00a0b",
}

// Embedded JSON documents with whitespace, escapes and characters encoding/json rewrites.
var trickyJSON = []string{
	`{}`, `{"a":1}`, ` { "a" : [ 1 , 2 , { "b" : null } ] , "c" : "x y" } `,
	"{\n\t\"html\": \"<b>&</b>\",\r\n \"ls\": \"\u2028\u2029\"}",
	`{"esc":"\"\\\/\b\f\n\r\t\u0041\u00e9 \u2028","n":-1.5e3,"t":true,"f":false}`,
	`{"nested":{"deep":[[],[{}],"]"],"s":"{not an object}"}}`,
}

func randomTime(r *rand.Rand) time.Time {
	switch r.IntN(5) {
	case 0:
		return time.Time{}
	case 1:
		return time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	case 2:
		return time.Unix(r.Int64N(4e9), r.Int64N(1e9)).UTC()
	case 3:
		return time.Unix(r.Int64N(4e9), r.Int64N(1e9)).In(time.FixedZone("x", (r.IntN(27)-13)*3600+r.IntN(2)*1800))
	}
	return time.Unix(r.Int64N(4e9), r.Int64N(1e9)).In(time.Local)
}

func randomExe(r *rand.Rand) *Execution {
	str := func() string { return trickyStrings[r.IntN(len(trickyStrings))] }
	id := func() string { return "id-" + str() + fmt.Sprint(r.IntN(100)) }
	raw := func() json.RawMessage {
		if r.IntN(3) == 0 {
			return nil
		}
		return json.RawMessage(trickyJSON[r.IntN(len(trickyJSON))])
	}
	statuses := []Status{StatusPending, StatusRunning, StatusDone, StatusFailed}
	e := &Execution{
		ID: id(), DefinitionID: id(), Status: statuses[r.IntN(len(statuses))],
		Outcome: str(), Error: str(), ActivePath: str(), Context: raw(),
		ParentID: str(), ChildID: str(), RootPath: str(),
		Priority: r.IntN(3), Version: r.Int64N(1 << 40),
		CreatedAt: randomTime(r), UpdatedAt: randomTime(r), FinishedAt: randomTime(r),
	}
	if r.IntN(2) == 0 {
		e.Context = nil
	} else if e.Context == nil {
		e.Context = json.RawMessage(`{}`)
	}
	if n := r.IntN(4); n > 0 || r.IntN(2) == 0 {
		e.History = map[string]string{}
		for range n {
			e.History[id()] = str()
		}
	}
	if n := r.IntN(4); n > 0 {
		e.Children = map[string]ChildState{}
		for range n {
			e.Children[id()] = ChildState{RootPath: str(), Finished: r.IntN(2) == 0, Outcome: str(), Result: raw(), Key: str()}
		}
	}
	if n := r.IntN(3); n > 0 {
		e.Timers = map[string]time.Time{}
		for range n {
			e.Timers[id()] = randomTime(r)
		}
	}
	if n := r.IntN(3); n > 0 {
		e.TimerTraces = map[string]string{}
		for range n {
			e.TimerTraces[id()] = str()
		}
	}
	if n := r.IntN(4); n > 0 {
		e.InvokeSeq = map[string]int{}
		for range n {
			e.InvokeSeq[id()] = r.IntN(1000) - 10
		}
	}
	for range r.IntN(3) {
		e.Deferred = append(e.Deferred, Event{ID: id(), Kind: id(), Data: raw(), CreatedAt: randomTime(r), Trace: str()})
	}
	if r.IntN(5) == 0 {
		e.Deferred = []Event{} // empty but not nil: omitted all the same
	}
	e.StartContext = raw()
	if r.IntN(3) == 0 {
		d := &DeadLetter{Event: Event{ID: id(), Kind: id(), Data: raw(), CreatedAt: randomTime(r), Trace: str()},
			Status: statuses[r.IntN(len(statuses))], ActivePath: str(), Context: raw()}
		if n := r.IntN(3); n > 0 || r.IntN(2) == 0 {
			d.History = map[string]string{}
			for range n {
				d.History[id()] = str()
			}
		}
		if n := r.IntN(3); n > 0 {
			d.Timers = map[string]time.Time{}
			for range n {
				d.Timers[id()] = randomTime(r)
			}
		}
		e.DeadLetter = d
	}
	if n := r.IntN(4); n > 0 {
		e.Attributes = map[string]AttrValue{}
		for i := range n {
			k := fmt.Sprintf("k%d", r.IntN(10))
			switch i % 4 {
			case 0:
				e.Attributes[k] = AttrString(str())
			case 1:
				e.Attributes[k] = AttrInt(r.Int64() - r.Int64())
			case 2:
				e.Attributes[k] = AttrTime(randomTime(r))
			default:
				e.Attributes[k] = AttrBool(r.IntN(2) == 0)
			}
		}
	}
	return e
}

// TestRecordEncodingMatchesJSON holds appendExecution and EncodeExecution to json.Marshal's exact bytes.
func TestRecordEncodingMatchesJSON(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		e := randomExe(r)
		want, werr := json.Marshal(e)
		got, gerr := appendExecution(nil, e)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("case %d: json.Marshal error %v, appendExecution error %v", i, werr, gerr)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("case %d differs:\n got %s\nwant %s", i, got, want)
		}
		if err := e.Validate(); err == nil {
			enc, err := EncodeExecution(e)
			if err != nil || !bytes.Equal(enc, want) {
				t.Fatalf("case %d: EncodeExecution = %s, %v; json.Marshal = %s", i, enc, err, want)
			}
		}
	}
}

// TestRecordEncodingCoversEveryField sets every field of Execution, found by reflection and
// recursively, so that a field added to the vocabulary fails here until appendExecution writes it.
func TestRecordEncodingCoversEveryField(t *testing.T) {
	t.Parallel()
	var e Execution
	fill(t, reflect.ValueOf(&e).Elem(), "Execution")
	want, err := json.Marshal(&e)
	if err != nil {
		t.Fatal(err)
	}
	got, err := appendExecution(nil, &e)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("a field of Execution is not encoded like encoding/json does:\n got %s (%v)\nwant %s", got, err, want)
	}
}

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
	attrType = reflect.TypeFor[AttrValue]()
)

// fill gives v, and everything inside it, a value that no omitempty or omitzero drops.
func fill(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	switch {
	case v.Type() == timeType:
		v.Set(reflect.ValueOf(time.Date(2031, 2, 3, 4, 5, 6, 789, time.UTC)))
		return
	case v.Type() == rawType:
		v.Set(reflect.ValueOf(json.RawMessage(` {"a": "<&>"} `)))
		return
	case v.Type() == attrType:
		v.Set(reflect.ValueOf(AttrString(path + " <&>")))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(path + " <&>")
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(7)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(t, v.Field(i), path+"."+v.Type().Field(i).Name)
			}
		}
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for _, k := range []string{"k2", "k1"} {
			e := reflect.New(v.Type().Elem()).Elem()
			fill(t, e, path+"["+k+"]")
			m.SetMapIndex(reflect.ValueOf(k).Convert(v.Type().Key()), e)
		}
		v.Set(m)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(t, p.Elem(), path)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fill(t, s.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
		v.Set(s)
	default:
		t.Fatalf("%s: kind %s: teach fill (and appendExecution) about it", path, v.Kind())
	}
}

func TestRecordEncodingRefusesWhatJSONRefuses(t *testing.T) {
	t.Parallel()
	for _, at := range []time.Time{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)} {
		e := &Execution{ID: "a", DefinitionID: "d", Status: StatusRunning, CreatedAt: at}
		if _, err := json.Marshal(e); err == nil {
			t.Fatalf("json.Marshal accepted %v", at)
		}
		if _, err := EncodeExecution(e); err == nil {
			t.Fatalf("EncodeExecution accepted %v", at)
		}
	}
}

// FuzzRecordEncoding compares the two encoders on arbitrary strings and JSON documents.
func FuzzRecordEncoding(f *testing.F) {
	for i, s := range trickyStrings {
		f.Add(s, trickyJSON[i%len(trickyJSON)], int64(i))
	}
	f.Fuzz(func(t *testing.T, s, doc string, n int64) {
		e := &Execution{
			ID: s, DefinitionID: s, Status: Status(s), Outcome: s, History: map[string]string{s: s, "k": s},
			Children:  map[string]ChildState{s: {RootPath: s, Outcome: s, Key: s}},
			InvokeSeq: map[string]int{s: int(n)}, Version: n, CreatedAt: time.Unix(n%(1<<33), n%1e9),
			Timers:      map[string]time.Time{s: time.Unix(n%(1<<33), n%1e9).UTC()},
			TimerTraces: map[string]string{s: s},
			Deferred:    []Event{{ID: s, Kind: s, Trace: s}},
			DeadLetter: &DeadLetter{Event: Event{ID: s, Kind: s, Trace: s}, Status: Status(s), ActivePath: s,
				History: map[string]string{s: s}, Timers: map[string]time.Time{s: time.Unix(n%(1<<33), 0)}},
		}
		if json.Valid([]byte(doc)) {
			e.Context = json.RawMessage(doc)
			e.Children[s] = ChildState{RootPath: s, Result: json.RawMessage(doc)}
			e.Deferred[0].Data = json.RawMessage(doc)
			e.StartContext = json.RawMessage(doc)
			e.DeadLetter.Context = json.RawMessage(doc)
			e.DeadLetter.Event.Data = json.RawMessage(doc)
		}
		want, werr := json.Marshal(e)
		got, gerr := appendExecution(nil, e)
		if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("differs:\n got %s (%v)\nwant %s (%v)", got, gerr, want, werr)
		}
	})
}

// BenchmarkEncodeExecution compares the encoder every backend's commit calls with what it replaced
// (Validate, then json.Marshal, which checks every embedded JSON document a second time), on an
// execution of a typical size (about 400 bytes encoded).
func BenchmarkEncodeExecution(b *testing.B) {
	now := time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)
	e := &Execution{ID: "order-42", DefinitionID: "order", Status: StatusRunning, Version: 7,
		ActivePath: "order.payment.waiting", CreatedAt: now, UpdatedAt: now,
		Context: json.RawMessage(`{"order":"A-1029","items":[{"sku":"x1","qty":2},{"sku":"y7","qty":1}],"total":129.5,"customer":"c-88213","notes":"leave at the door"}`),
		History: map[string]string{"order": "order.payment"}}
	b.Run("EncodeExecution", func(b *testing.B) {
		for b.Loop() {
			if _, err := EncodeExecution(e); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ValidateThenMarshal", func(b *testing.B) {
		for b.Loop() {
			if err := e.Validate(); err != nil {
				b.Fatal(err)
			}
			if _, err := json.Marshal(e); err != nil {
				b.Fatal(err)
			}
		}
	})
}
