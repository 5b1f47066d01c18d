package record

import (
	"os"

	"golang.org/x/sys/unix"
)

// Lock takes the flock of the file at path (made if missing), LOCK_SH or LOCK_EX, optionally with
// LOCK_NB, and returns what releases it. The backends hold it shared while a command starts and exclusive
// while a sandbox's state changes, so a Stop from any process cannot miss a command that is starting.
func Lock(path string, how int) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		return nil, err
	}
	return func() { unix.Flock(int(f.Fd()), unix.LOCK_UN); f.Close() }, nil
}
