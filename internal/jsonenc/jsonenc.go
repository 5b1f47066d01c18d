// Package jsonenc appends JSON to byte slices without reflection, byte for
// byte as encoding/json writes it, for the types hot paths encode over and
// over (checkpointed messages, JSON-shaped state).
package jsonenc

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"slices"
	"unicode/utf8"
	"unsafe"
)

const hex = "0123456789abcdef"

// String appends s as a JSON string, escaped as encoding/json escapes it:
// HTML-safe, invalid UTF-8 replaced by U+FFFD, U+2028 and U+2029 escaped.
func String(b []byte, s string) []byte {
	b = slices.Grow(b, len(s)+2)
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		// Most text needs no escaping: skip it eight bytes at a time.
		i += plainWords(s[i:])
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// Masks of the low and the high bit of each byte of a word.
const (
	lows  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plainWords returns the length of the longest prefix of s made of whole
// eight-byte words of ASCII that a JSON string holds as it is: no byte below
// 0x20, no '"', '\\', '<', '>' or '&'. In a word XORed with a byte c
// repeated, the bytes equal to c are zero, and subtracting 1 from a zero
// byte sets its high bit; a borrow only carries out of a byte that is
// flagged already, so the answer for the word is exact. '<' and '>' differ
// in one bit, as do '"' and '&': setting that bit compares with both.
func plainWords(s string) int {
	b := unsafe.Slice(unsafe.StringData(s), len(s))
	le := binary.LittleEndian
	i := 0
	// Four words at a time, flags ORed together: the four are independent,
	// so the processor works on them at once.
	for ; i+32 <= len(b); i += 32 {
		w := b[i : i+32 : i+32]
		if (special(le.Uint64(w))|special(le.Uint64(w[8:]))|special(le.Uint64(w[16:]))|special(le.Uint64(w[24:])))&highs != 0 {
			break
		}
	}
	for ; i+8 <= len(b); i += 8 {
		if special(le.Uint64(b[i:]))&highs != 0 {
			break
		}
	}
	return i
}

// special returns w with the high bit set in each byte that a JSON string
// cannot hold as it is (and, through borrows, possibly in bytes above one).
func special(w uint64) uint64 {
	lt := (w | lows*0x02) ^ lows*'>'
	qa := (w | lows*0x04) ^ lows*'&'
	bs := w ^ lows*'\\'
	return w | (w - lows*0x20) | (lt-lows)&^lt | (qa-lows)&^qa | (bs-lows)&^bs
}

// Raw appends already-encoded JSON as encoding/json writes a
// json.RawMessage: compacted and HTML-escaped. Invalid JSON is an error.
func Raw(b []byte, raw []byte) ([]byte, error) {
	if plainValue(raw) {
		return append(b, raw...), nil
	}
	var c bytes.Buffer
	if err := json.Compact(&c, raw); err != nil {
		return b, err
	}
	var h bytes.Buffer
	json.HTMLEscape(&h, c.Bytes())
	return append(b, h.Bytes()...), nil
}

// plainValue reports whether raw is one JSON value that compacting and HTML
// escaping leave as it is: valid as encoding/json.Valid says, with no space
// outside strings, no '<', '>' or '&', and no byte that may start U+2028 or
// U+2029. It reads strings, most of what tool arguments hold, eight bytes
// at a time.
func plainValue(raw []byte) bool {
	v := validator{b: raw}
	return v.value(0) && v.i == len(raw)
}

// maxDepth is how deep encoding/json lets objects and arrays nest.
const maxDepth = 10000

type validator struct {
	b []byte
	i int
}

func (v *validator) next(c byte) bool {
	if v.i < len(v.b) && v.b[v.i] == c {
		v.i++
		return true
	}
	return false
}

// value reads a value inside depth objects and arrays.
func (v *validator) value(depth int) bool {
	if v.i >= len(v.b) {
		return false
	}
	switch c := v.b[v.i]; {
	case c == '"':
		return v.str()
	case c == '{':
		v.i++
		if depth >= maxDepth {
			return false
		}
		if v.next('}') {
			return true
		}
		for {
			if v.i >= len(v.b) || v.b[v.i] != '"' || !v.str() || !v.next(':') || !v.value(depth+1) {
				return false
			}
			if !v.next(',') {
				return v.next('}')
			}
		}
	case c == '[':
		v.i++
		if depth >= maxDepth {
			return false
		}
		if v.next(']') {
			return true
		}
		for {
			if !v.value(depth + 1) {
				return false
			}
			if !v.next(',') {
				return v.next(']')
			}
		}
	case c == 't':
		return v.word("true")
	case c == 'f':
		return v.word("false")
	case c == 'n':
		return v.word("null")
	case c == '-' || '0' <= c && c <= '9':
		return v.number()
	}
	return false
}

func (v *validator) word(w string) bool {
	if len(v.b)-v.i < len(w) || string(v.b[v.i:v.i+len(w)]) != w {
		return false
	}
	v.i += len(w)
	return true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func (v *validator) digits() bool {
	start := v.i
	for v.i < len(v.b) && isDigit(v.b[v.i]) {
		v.i++
	}
	return v.i > start
}

func (v *validator) number() bool {
	v.next('-')
	if !v.next('0') && !v.digits() {
		return false
	}
	if v.next('.') && !v.digits() {
		return false
	}
	if v.next('e') || v.next('E') {
		if !v.next('+') {
			v.next('-')
		}
		return v.digits()
	}
	return true
}

// str reads a string, v.i at its opening quote.
func (v *validator) str() bool {
	b, i := v.b, v.i+1
	for {
		for i+8 <= len(b) && plainInString(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		if i >= len(b) {
			return false
		}
		switch c := b[i]; {
		case c == '"':
			v.i = i + 1
			return true
		case c == '\\':
			if i+1 >= len(b) {
				return false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return false
				}
				for _, h := range b[i+2 : i+6] {
					if !isDigit(h) && !('a' <= h && h <= 'f') && !('A' <= h && h <= 'F') {
						return false
					}
				}
				i += 6
			default:
				return false
			}
		case c < 0x20, c == '<', c == '>', c == '&', c == 0xe2:
			return false
		default:
			i++
		}
	}
}

// plainInString reports whether none of the eight bytes of w ends a
// string, starts an escape, is a control byte, or is one plainValue turns
// away: '"', '\\', below 0x20, '<', '>', '&', 0xe2. See plainWords for how.
func plainInString(w uint64) bool {
	lt := (w | lows*0x02) ^ lows*'>'
	qa := (w | lows*0x04) ^ lows*'&'
	bs := w ^ lows*'\\'
	e2 := w ^ lows*0xe2
	flag := (w-lows*0x20)&^w | (lt-lows)&^lt | (qa-lows)&^qa | (bs-lows)&^bs | (e2-lows)&^e2
	return flag&highs == 0
}
