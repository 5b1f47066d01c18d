// Package jsonenc appends JSON to byte slices without reflection, byte for
// byte as encoding/json writes it, for the types hot paths encode over and
// over (checkpointed messages, JSON-shaped state).
package jsonenc

import (
	"bytes"
	"encoding/json"
	"slices"
	"unicode/utf8"
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
	i := 0
	for ; i+8 <= len(s); i += 8 {
		t := s[i : i+8]
		w := uint64(t[0]) | uint64(t[1])<<8 | uint64(t[2])<<16 | uint64(t[3])<<24 |
			uint64(t[4])<<32 | uint64(t[5])<<40 | uint64(t[6])<<48 | uint64(t[7])<<56
		lt := (w | lows*0x02) ^ lows*'>'
		qa := (w | lows*0x04) ^ lows*'&'
		bs := w ^ lows*'\\'
		flag := w | (w - lows*0x20) | (lt-lows)&^lt | (qa-lows)&^qa | (bs-lows)&^bs
		if flag&highs != 0 {
			break
		}
	}
	return i
}

// Raw appends already-encoded JSON as encoding/json writes a
// json.RawMessage: compacted and HTML-escaped. Invalid JSON is an error.
func Raw(b []byte, raw []byte) ([]byte, error) {
	if clean(raw) && json.Valid(raw) {
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

// clean reports whether raw has nothing compacting or HTML escaping would
// change: no whitespace, no <, >, &, and no byte that may start U+2028/9.
func clean(raw []byte) bool {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r', '<', '>', '&', 0xE2:
			return false
		}
	}
	return true
}
