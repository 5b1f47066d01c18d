// Package lz compresses byte strings that repeat long runs of themselves —
// a checkpoint's JSON holds the same message, list or map again and again —
// into literal bytes and copies of what came before (LZ77). It runs at
// about the speed of memory where its input repeats, and skips ahead where
// it finds nothing to copy, so data that does not compress costs little.
package lz

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/bits"
	"slices"
)

// ErrCorrupt reports data that is not a compressed form Append wrote.
var ErrCorrupt = errors.New("lz: corrupt data")

const (
	tableBits = 14
	// minCopy is the shortest copy worth its token (two or three varints).
	minCopy = 16
)

// The compressed form is uvarint(length of the data), then tokens:
// uvarint(n) and n literal bytes, then uvarint(m) and, when m > 0,
// uvarint(d): m bytes copied from d bytes back in the output, which may
// overlap what the copy writes (d < m repeats the last d bytes). The last
// token has m = 0.

// Append appends the compressed form of src to dst.
func Append(dst, src []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(src)))
	if len(src) < minCopy || len(src) > math.MaxInt32 {
		return appendToken(dst, src, 0, 0)
	}
	// table maps a hash of eight bytes to one more than where they were
	// last seen.
	table := make([]int32, 1<<tableBits)
	lit, i := 0, 0
	for i+8 <= len(src) {
		w := binary.LittleEndian.Uint64(src[i:])
		h := (w * 0x9e3779b97f4a7c15) >> (64 - tableBits)
		c := int(table[h]) - 1
		table[h] = int32(i + 1)
		if c >= 0 && binary.LittleEndian.Uint64(src[c:]) == w {
			if n := 8 + common(src[c+8:], src[i+8:]); n >= minCopy {
				dst = appendToken(dst, src[lit:i], n, i-c)
				i += n
				lit = i
				continue
			}
		}
		// The longer nothing was found, the further to the next look.
		i += 1 + min((i-lit)>>6, 63)
	}
	return appendToken(dst, src[lit:], 0, 0)
}

func appendToken(dst, lit []byte, n, d int) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(lit)))
	dst = append(dst, lit...)
	dst = binary.AppendUvarint(dst, uint64(n))
	if n > 0 {
		dst = binary.AppendUvarint(dst, uint64(d))
	}
	return dst
}

// common returns the length of the common prefix of a and b.
func common(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	// Copies run long: compare blocks with the runtime's vector code first.
	for i+256 <= n && bytes.Equal(a[i:i+256], b[i:i+256]) {
		i += 256
	}
	for ; i+8 <= n; i += 8 {
		if x := binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(b[i:]); x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// DecodedLen returns the length of the data compressed in b.
func DecodedLen(b []byte) (int, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > math.MaxInt {
		return 0, ErrCorrupt
	}
	return int(n), nil
}

// AppendDecoded appends the data compressed in b to dst. It returns an
// error wrapping ErrCorrupt, and dst as it was, when b is not a compressed
// form Append wrote.
//
// The output is made room for at once when dst has it already or the
// length b states is plausible for b's size; otherwise it grows as the
// tokens write it, so a damaged length alone allocates nothing. (A run of
// one byte compresses a million to one, so no ratio can tell a damaged
// length from a true one.)
func AppendDecoded(dst, b []byte) ([]byte, error) {
	n, k := binary.Uvarint(b)
	base := len(dst)
	if k <= 0 || n > uint64(math.MaxInt-base) {
		return dst, ErrCorrupt
	}
	out := dst
	if n <= uint64(len(b))*64+4096 {
		out = slices.Grow(dst, int(n))
	}
	end := base + int(n)
	b = b[k:]
	last := uint64(1) // the last token's m: the data ends after one with m = 0
	for len(b) > 0 && last != 0 {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) || l > uint64(end-len(out)) {
			return dst, ErrCorrupt
		}
		out = append(out, b[k:k+int(l)]...)
		b = b[k+int(l):]
		m, k := binary.Uvarint(b)
		if k <= 0 || m > uint64(end-len(out)) {
			return dst, ErrCorrupt
		}
		b = b[k:]
		if last = m; m == 0 {
			continue
		}
		d, k := binary.Uvarint(b)
		if k <= 0 || d == 0 || d > uint64(len(out)-base) {
			return dst, ErrCorrupt
		}
		b = b[k:]
		// The bytes from start on repeat every d bytes: copy what is
		// there, which doubles each time, until m bytes are written.
		start := len(out) - int(d)
		for left := int(m); left > 0; {
			c := min(left, len(out)-start)
			out = append(out, out[start:start+c]...)
			left -= c
		}
	}
	if len(out) != end || last != 0 || len(b) != 0 {
		return dst, ErrCorrupt
	}
	return out, nil
}
