package local

import (
	"sync"
	"unicode/utf8"
)

// tailBuffer keeps the last max bytes written to it, so a command that prints gigabytes costs max bytes.
type tailBuffer struct {
	mu    sync.Mutex
	max   int
	buf   []byte // ring storage, len(buf) <= max
	start int    // index of the oldest byte once the ring is full
	total int64
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	t.total += int64(n)
	if t.max <= 0 {
		return n, nil
	}
	if len(p) >= t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		t.start = 0
		return n, nil
	}
	if room := t.max - len(t.buf); room > 0 {
		k := min(room, len(p))
		t.buf = append(t.buf, p[:k]...)
		p = p[k:]
	}
	for len(p) > 0 {
		k := copy(t.buf[t.start:], p)
		p = p[k:]
		t.start = (t.start + k) % t.max
	}
	return n, nil
}

// String returns the kept tail and whether earlier bytes were dropped. A tail that starts inside a UTF-8
// sequence loses the partial rune.
func (t *tailBuffer) String() (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]byte, 0, len(t.buf))
	out = append(out, t.buf[t.start:]...)
	out = append(out, t.buf[:t.start]...)
	truncated := t.total > int64(len(out))
	if truncated {
		for i := 0; i < utf8.UTFMax && len(out) > 0 && !utf8.RuneStart(out[0]); i++ {
			out = out[1:]
		}
	}
	return string(out), truncated
}

// Tail returns at most n of the last bytes.
func (t *tailBuffer) Tail(n int) string {
	s, _ := t.String()
	if n > 0 && len(s) > n {
		s = s[len(s)-n:]
	}
	return s
}
