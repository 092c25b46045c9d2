package chart

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// The hand-written codec gives the bytes encoding/json gives.
func TestCodecMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	values := []any{0.0, math.Copysign(0, -1), 1.0, -2.5, 1e-7, 1e-6, 1e20, 1e21, 123456789.125, math.MaxFloat64,
		-1e20, 1 << 53, 1<<53 + 2, -(1 << 53), 9007199254740993.0, 42.0, -3.0, 0.1, 1e15 + 0.5,
		0, -7, int64(1 << 60), true, false, "", "plain", "quote\"", "back\\slash", "<html>&", "é", "\u2028", "\x01",
		nil, []any{1, "a"}, map[string]any{"z": 1, "a": []int{2}}}
	for _, v := range values {
		want, _ := json.Marshal(v)
		got, err := encodeValue(v)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("encodeValue(%#v) = %s, %v; want %s", v, got, err, want)
		}
	}
	rapid.Check(t, func(rt *rapid.T) {
		gen := rapid.OneOf(
			rapid.Just(`1`), rapid.Just(`"a b"`), rapid.Just(` { "x" : [1, 2] } `), rapid.Just(`"<&>"`),
			rapid.Just("\"\u2028\""), rapid.Just(`null`), rapid.Just(`"\"q\\\\"`), rapid.Just(`[{"a":"}"},"]"]`),
			rapid.Just(`-0.5e+3`), rapid.Just(`true`),
		)
		m := rapid.MapOf(rapid.StringMatching(`[a-z<"\\é ]{0,6}`), gen).Draw(rt, "members")
		raws := map[string]json.RawMessage{}
		for k, v := range m {
			raws[k] = json.RawMessage(v)
		}
		want, err := json.Marshal(raws)
		if err != nil {
			rt.Fatal(err)
		}
		got, err := encodeObject(raws)
		if err != nil || !bytes.Equal(got, want) {
			rt.Fatalf("encodeObject = %s, %v; want %s", got, err, want)
		}
		// Decoding what was written, spaced out, gives the members back.
		spaced := bytes.ReplaceAll(want, []byte(`":`), []byte(`" :  `))
		var wantM map[string]json.RawMessage
		if err := json.Unmarshal(spaced, &wantM); err != nil {
			rt.Fatal(err)
		}
		gotM, err := decodeObject(spaced)
		if err != nil || !reflect.DeepEqual(gotM, wantM) {
			rt.Fatalf("decodeObject(%s) = %v, %v; want %v", spaced, gotM, err, wantM)
		}
		// Looking a key up without decoding finds what decoding finds.
		for k, v := range wantM {
			if got, found, ok := lookupMember(spaced, k); ok && (!found || !bytes.Equal(got, v)) {
				rt.Fatalf("lookupMember(%s, %q) = %s, %v", spaced, k, got, found)
			}
		}
		// Setting keys without decoding encodes as decoding, setting and encoding would.
		var patch []member
		for k, v := range rapid.MapOf(rapid.StringMatching(`[a-z]{0,3}`), gen).Draw(rt, "patch") {
			enc, _ := json.Marshal(json.RawMessage(v))
			patch = setMember(patch, k, enc)
			wantM[k] = enc
		}
		wantMerged, _ := json.Marshal(wantM)
		if got, ok := mergeMembers(want, patch); ok && !bytes.Equal(got, wantMerged) {
			rt.Fatalf("mergeMembers(%s, %v) = %s, want %s", want, patch, got, wantMerged)
		} else if !ok && plainKeys(raws) {
			rt.Fatalf("mergeMembers refused %s", want)
		}
	})
	for _, bad := range []string{`[1]`, `"s"`, `{"a":}`, `{"a":1`, ``, `nul`} {
		if _, err := decodeObject([]byte(bad)); err == nil {
			t.Errorf("decodeObject(%q) accepted it", bad)
		}
	}
	if m, err := decodeObject([]byte(` {} `)); err != nil || len(m) != 0 {
		t.Errorf("empty object: %v %v", m, err)
	}
}

func plainKeys(m map[string]json.RawMessage) bool {
	for k := range m {
		if !plainString(k) {
			return false
		}
	}
	return true
}

// FuzzContextCodec: on any valid JSON object, the fast paths agree with encoding/json and never
// panic; on anything else, decoding fails.
func FuzzContextCodec(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, ` {"b" : "x\"y", "a":[1,{"c":"}"}]} `, `{"a":1,"a":2}`, `{"\u0061":true}`, `[1]`, `{"a":`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var want map[string]json.RawMessage
		werr := json.Unmarshal(raw, &want)
		got, gerr := decodeObject(raw)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("decodeObject(%q) error %v, encoding/json %v", raw, gerr, werr)
		}
		if werr != nil || want == nil {
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeObject(%q) = %v, want %v", raw, got, want)
		}
		for k, v := range want {
			if g, found, ok := lookupMember(raw, k); ok && (!found || !bytes.Equal(g, v)) {
				t.Fatalf("lookupMember(%q, %q) = %q %v", raw, k, g, found)
			}
		}
		patch := []member{{"k", json.RawMessage(`1`)}}
		want["k"] = json.RawMessage(`1`)
		if merged, ok := mergeMembers(raw, patch); ok {
			exp, err := json.Marshal(want)
			if err != nil || !bytes.Equal(merged, exp) {
				t.Fatalf("mergeMembers(%q) = %s, want %s", raw, merged, exp)
			}
		}
	})
}

func TestValidJSONMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, s := range []string{``, ` `, `{}`, ` {"a" : [1, -0.5e+3, true, false, null, "x\u00e9\n"]} `, `[]`, `"s"`, `0`, `-`,
		`01`, `1.`, `.5`, `1e`, `1e+`, `-0`, `{"a":1,}`, `[1,]`, `{"a" 1}`, `{1:2}`, `{"a":1}x`, `"\x"`, `"\u12"`,
		`"\u12G4"`, "\"\x01\"", "\"\xff\"", `tru`, `nulls`, `[` + strings.Repeat(`[`, 40) + strings.Repeat(`]`, 41),
		strings.Repeat(`[`, 10001) + strings.Repeat(`]`, 10001), `{"a":{"b":{"c":[]}}}`, `"`, `"\`, `{"a"`} {
		if got, want := validJSON([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("validJSON(%.40q) = %v, json.Valid %v", s, got, want)
		}
	}
}

// FuzzValidJSON: the hand-written validator agrees with json.Valid on any input.
func FuzzValidJSON(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,2.5e-3,"\u0041"]}`, `[`, `-01`, "\"\t\"", `{"a":tru}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if got, want := validJSON(raw), json.Valid(raw); got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid %v", raw, got, want)
		}
	})
}

// Values.Float reads small integers by hand; it must give what strconv.ParseFloat gives.
func TestFloatMatchesParseFloat(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"0", "-0", "7", "-7", "42", "999999999999999", "-999999999999999", "1234567890123456",
		"9007199254740993", "2.5", "-0.5e3", "1e2", "12345678901234567890"} {
		v := Values{c: &ctxState{raw: json.RawMessage(`{"n":` + s + `}`)}}
		want, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		if got := v.Float("n"); got != want || math.Signbit(got) != math.Signbit(want) {
			t.Errorf("Float of %s = %v, want %v", s, got, want)
		}
	}
}
