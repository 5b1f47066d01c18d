package lz

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
)

func inputs() map[string][]byte {
	r := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 100_000)
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	msg := `{"id":"` + strings.Repeat("3f2b8c1e-5d6a-4e7f-9a0b-1c2d3e4f5a6b", 100) + `","role":"tool"}`
	list := "[" + strings.Repeat(msg+",", 300) + msg + "]"
	mixed := append(append([]byte(list), random[:5000]...), list[:20000]...)
	return map[string][]byte{
		"empty":   nil,
		"one":     {'x'},
		"short":   []byte("0123456789abcdefghij"),
		"zeros":   make([]byte, 70_000),
		"period3": bytes.Repeat([]byte("abc"), 10_000),
		"random":  random,
		"list":    []byte(list),
		"mixed":   mixed,
		"tail":    append(bytes.Repeat([]byte("0123456789abcdef"), 4), "0123456"...),
	}
}

func TestRoundTrip(t *testing.T) {
	for name, in := range inputs() {
		packed := Append([]byte("prefix"), in)
		if n, err := DecodedLen(packed[6:]); err != nil || n != len(in) {
			t.Errorf("%s: DecodedLen = %d, %v; want %d", name, n, err, len(in))
		}
		got, err := AppendDecoded([]byte("before"), packed[6:])
		if err != nil || !bytes.Equal(got, append([]byte("before"), in...)) {
			t.Errorf("%s: round trip gave %d bytes, %v; want %d bytes", name, len(got)-6, err, len(in))
		}
		t.Logf("%s: %d → %d bytes", name, len(in), len(packed)-6)
	}
}

// What repeats is stored once, and what does not costs little more than
// its length.
func TestRatio(t *testing.T) {
	in := inputs()
	for name, most := range map[string]int{"list": len(in["list"]) / 100, "zeros": 100, "period3": 100, "mixed": 6000, "random": len(in["random"]) + 16} {
		if n := len(Append(nil, in[name])); n > most {
			t.Errorf("%s: %d bytes compress to %d, want at most %d", name, len(in[name]), n, most)
		}
	}
}

// Damaged data is an error or other bytes, never a panic, and truncated
// data is always an error.
func TestCorrupt(t *testing.T) {
	packed := Append(nil, inputs()["mixed"])
	for i := 0; i < len(packed); i += 1 + i/64 {
		if _, err := AppendDecoded(nil, packed[:i]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d bytes: err %v, want ErrCorrupt", i, err)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		bad := bytes.Clone(packed)
		bad[r.IntN(len(bad))] ^= byte(1 + r.IntN(255))
		AppendDecoded(nil, bad)
	}
	if _, err := AppendDecoded(nil, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a huge length in a short input: err %v, want ErrCorrupt", err)
	}
	// A length of 1 GiB over a few bytes of tokens is rejected without making room for it.
	huge := binary.AppendUvarint(nil, 1<<30)
	huge = append(huge, 1, 'x', 0)
	allocs := testing.AllocsPerRun(3, func() {
		if _, err := AppendDecoded(nil, huge); !errors.Is(err, ErrCorrupt) {
			t.Errorf("1 GiB stated, one byte given: err %v, want ErrCorrupt", err)
		}
	})
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	AppendDecoded(nil, huge)
	runtime.ReadMemStats(&ms)
	if grew := ms.TotalAlloc - before; grew > 1<<20 {
		t.Errorf("a damaged length allocated %d bytes (%v allocations)", grew, allocs)
	}
	// Tokens after the last one are damage too.
	if _, err := AppendDecoded(nil, append(Append(nil, []byte("abc")), 1, 'x', 0)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("tokens after the last: err %v, want ErrCorrupt", err)
	}
}

// Data that compresses far more than a million to one comes back whole.
func TestLongRun(t *testing.T) {
	in := append(append([]byte{'"'}, bytes.Repeat([]byte{'A'}, 20<<20)...), '"')
	packed := Append(nil, in)
	if len(packed) > 64 {
		t.Fatalf("20 MiB of one byte packed into %d bytes", len(packed))
	}
	out, err := AppendDecoded(nil, packed)
	if err != nil || !bytes.Equal(out, in) {
		t.Fatalf("round trip of a long run: %d bytes, %v", len(out), err)
	}
}

func FuzzRoundTrip(f *testing.F) {
	for _, in := range inputs() {
		if len(in) < 1000 {
			f.Add(in)
		}
	}
	f.Add([]byte(strings.Repeat("ab", 40) + "c" + strings.Repeat("ab", 40)))
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := AppendDecoded(nil, Append(nil, in))
		if err != nil || !bytes.Equal(got, in) {
			t.Fatalf("round trip of %q: %q, %v", in, got, err)
		}
		AppendDecoded(nil, in) // arbitrary input must not panic
	})
}

func BenchmarkAppend(b *testing.B) {
	for _, name := range []string{"list", "random"} {
		in := inputs()[name]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			var out []byte
			for b.Loop() {
				out = Append(out[:0], in)
			}
		})
	}
}

func BenchmarkAppendDecoded(b *testing.B) {
	in := inputs()["list"]
	packed := Append(nil, in)
	b.SetBytes(int64(len(in)))
	var out []byte
	for b.Loop() {
		out, _ = AppendDecoded(out[:0], packed)
	}
}
