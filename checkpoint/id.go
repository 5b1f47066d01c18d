package checkpoint

import (
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// lastIDTime is the time part of the newest id this process has made. It is
// the one piece of process-wide state here: without it two ids made in the
// same nanosecond could not be ordered.
var lastIDTime atomic.Int64

const hexDigits = "0123456789abcdef"

// IDLen is the length of an id made by NewID.
const IDLen = 16 + 1 + 12

// NewID returns a new checkpoint id. Ids sort, as strings, in the order they
// were made: each is 16 hex digits of Unix nanoseconds, a dash and 12 random
// hex digits. Within one process the time part strictly increases, even for
// calls in the same nanosecond from many goroutines (it is advanced by one
// when the clock has not moved); the random part keeps ids of different
// processes apart.
func NewID() string {
	now := time.Now().UnixNano()
	for {
		last := lastIDTime.Load()
		t := now
		if t <= last {
			t = last + 1
		}
		if lastIDTime.CompareAndSwap(last, t) {
			return formatID(uint64(t), rand.Uint64())
		}
	}
}

func formatID(t, r uint64) string {
	var b [IDLen]byte
	for i := 15; i >= 0; i-- {
		b[i] = hexDigits[t&0xf]
		t >>= 4
	}
	b[16] = '-'
	for i := IDLen - 1; i > 16; i-- {
		b[i] = hexDigits[r&0xf]
		r >>= 4
	}
	return string(b[:])
}
