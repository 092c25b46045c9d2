package check

// PostgreSQL's jsonb accepts less than the JSON grammar allows. Every backend refuses what jsonb
// refuses, so that a document accepted in memory or in SQLite could also be stored in PostgreSQL
// and the backends never disagree about the same input. The rules below are PostgreSQL 15's
// (json_lex_string for strings; numeric_in, which jsonb runs on every number, for numbers), with
// a UTF8 server encoding.

// The limits of PostgreSQL's numeric type, which holds every jsonb number.
const (
	// numericMaxWeight is the highest power of ten a numeric's leading digit may have: the
	// weight is an int16 counted in base-10000 digits, so at most 32768*4 = 131072 digits stand
	// before the decimal point. "1e131071" is stored, "1e131072" overflows.
	numericMaxWeight = 131071
	// numericMaxScale is the most digits a numeric keeps after the decimal point, trailing zeros
	// included: the display scale has 14 bits. "1e-16383" is stored, "1e-16384" overflows, and so
	// does "0e-16384": the scale counts even for zero.
	numericMaxScale = 16383
	// numericMaxExponent is the smallest exponent magnitude refused outright, before the digits
	// are looked at (INT_MAX/2 in numeric_in), so that even "0e1073741823" overflows while
	// "0e1073741822" is zero.
	numericMaxExponent = 1<<30 - 1
)

// jsonbProblem says what PostgreSQL's jsonb would refuse in raw, a valid JSON document, or
// returns "" when it would store it:
//   - the escape \u0000 (jsonb text cannot hold NUL);
//   - a \u escape of a high surrogate (D800-DBFF) not immediately followed by the \u escape of a
//     low surrogate (DC00-DFFF), and a low surrogate escape not immediately preceded by a high
//     one: a lone surrogate is no character at all;
//   - a number numeric cannot hold (see the limits above).
//
// Raw (unescaped) text cannot carry a surrogate: valid UTF-8 has none.
func jsonbProblem(raw []byte) string {
	for i := 0; i < len(raw); {
		switch c := raw[i]; {
		case c == '"':
			n, problem := jsonbString(raw[i+1:])
			if problem != "" {
				return problem
			}
			i += 1 + n
		case c == '-' || isDigit(c):
			n, problem := jsonbNumber(raw[i:])
			if problem != "" {
				return problem
			}
			i += n
		default: // structure, whitespace and the literals true, false and null
			i++
		}
	}
	return ""
}

// jsonbString checks the string whose content starts at s[0] (after the opening quote) and
// returns how many bytes it spans, closing quote included.
func jsonbString(s []byte) (int, string) {
	const loneHigh = "contains a high surrogate escape not followed by a low one"
	high := false // the previous character was a high surrogate escape
	for i := 0; i < len(s); {
		c := s[i]
		if c == '"' {
			if high {
				return 0, loneHigh
			}
			return i + 1, ""
		}
		if c != '\\' || s[i+1] != 'u' {
			if high {
				return 0, loneHigh
			}
			if c == '\\' {
				i += 2 // a one-letter escape, \" and \\ included
			} else {
				i++
			}
			continue
		}
		r := hex4(s[i+2 : i+6])
		i += 6
		switch {
		case r == 0:
			return 0, `contains a \u0000 escape`
		case r >= 0xD800 && r <= 0xDBFF:
			if high {
				return 0, loneHigh
			}
			high = true
		case r >= 0xDC00 && r <= 0xDFFF:
			if !high {
				return 0, "contains a low surrogate escape not preceded by a high one"
			}
			high = false
		default:
			if high {
				return 0, loneHigh
			}
		}
	}
	return len(s), "" // unreachable for valid JSON: every string is closed
}

// jsonbNumber checks the number at the start of s (grammar already checked) and returns its
// length.
func jsonbNumber(s []byte) (int, string) {
	i := 0
	if s[i] == '-' {
		i++
	}
	start := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	whole := s[start:i] // JSON allows no leading zero but "0" itself
	var frac []byte
	if i < len(s) && s[i] == '.' {
		i++
		start = i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		frac = s[start:i]
	}
	exp := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		neg := false
		if s[i] == '+' || s[i] == '-' {
			neg = s[i] == '-'
			i++
		}
		for i < len(s) && isDigit(s[i]) {
			if exp < numericMaxExponent { // saturate: anything at the bound is refused anyway
				exp = min(exp*10+int(s[i]-'0'), numericMaxExponent)
			}
			i++
		}
		if exp >= numericMaxExponent {
			return 0, "holds a number whose exponent PostgreSQL's numeric cannot hold"
		}
		if neg {
			exp = -exp
		}
	}
	if len(frac)-exp > numericMaxScale {
		return 0, "holds a number with more digits after the decimal point than PostgreSQL's numeric keeps"
	}
	// The power of ten of the leading non-zero digit; a zero has none and any weight. (Its lower
	// bound, -131072, cannot be reached: the scale check above already stops at -16383.)
	lead, nonZero := len(whole)-1, whole[0] != '0'
	if !nonZero {
		for k, d := range frac {
			if d != '0' {
				lead, nonZero = -(k + 1), true
				break
			}
		}
	}
	if nonZero && lead+exp > numericMaxWeight {
		return 0, "holds a number with more digits before the decimal point than PostgreSQL's numeric keeps"
	}
	return i, ""
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// hex4 decodes the four hex digits of a \u escape (grammar already checked).
func hex4(h []byte) rune {
	var r rune
	for _, c := range h {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		default:
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}
