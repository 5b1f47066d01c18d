package checkpoint

import "errors"

// ErrInvalid reports a call a Saver cannot serve as asked: a Config without a
// thread id, writes without a checkpoint id, a checkpoint whose parent
// disagrees with its Config. The wrapping error says which.
var ErrInvalid = errors.New("checkpoint: invalid argument")

// ErrThreadExists reports that CopyThread was asked to copy into a thread
// that already has checkpoints.
var ErrThreadExists = errors.New("checkpoint: destination thread already has checkpoints")

// IsSpecialChannel reports whether writes to channel are upserted by
// PutWrites (ErrorChannel, InterruptChannel, ResumeChannel) rather than
// inserted once.
func IsSpecialChannel(channel string) bool {
	switch channel {
	case ErrorChannel, InterruptChannel, ResumeChannel:
		return true
	}
	return false
}
