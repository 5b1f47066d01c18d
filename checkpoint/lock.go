package checkpoint

import (
	"fmt"
	"sync"
)

// ThreadLocks gives one holder at a time exclusive use of a thread id within
// this process. Savers embed it to implement ThreadLocker. The zero value is
// ready to use; a ThreadLocks must not be copied after first use.
type ThreadLocks struct {
	mu   sync.Mutex
	held map[string]*lockHold
}

type lockHold struct{ _ byte } // non-zero size so every hold is a distinct pointer

// TryLock takes the thread for the caller, or returns an error wrapping
// ErrThreadBusy when someone else holds it; it never waits. The returned
// unlock releases the hold; calling it again does nothing.
func (l *ThreadLocks) TryLock(threadID string) (unlock func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, busy := l.held[threadID]; busy {
		return nil, fmt.Errorf("thread %q: %w; wait for the other run to finish or use another thread id", threadID, ErrThreadBusy)
	}
	if l.held == nil {
		l.held = make(map[string]*lockHold)
	}
	h := new(lockHold)
	l.held[threadID] = h
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.held[threadID] == h {
			delete(l.held, threadID)
		}
	}, nil
}
