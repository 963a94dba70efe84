package pipeline

import (
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/tributary/tributary/internal/quote"
)

// ErrPermanent matches errors that retrying cannot fix: a record that cannot
// be decoded, an item a projection rejects, an entity type the policy refuses.
// The batch processor reports them like any failure, so that the event source
// mapping's bounded retries, bisection and on-failure destination take the
// record out of the way; or, under SkipPermanent, logs and skips them.
var ErrPermanent = errors.New("permanent failure")

// Permanent marks err as permanent: errors.Is(Permanent(err), ErrPermanent).
func Permanent(err error) error {
	if err == nil || errors.Is(err, ErrPermanent) {
		return err
	}
	return permanentError{err}
}

type permanentError struct{ err error }

func (e permanentError) Error() string        { return e.err.Error() }
func (e permanentError) Unwrap() error        { return e.err }
func (e permanentError) Is(target error) bool { return target == ErrPermanent }

// ErrNotEvent matches the error of a payload that is not an event at all
// (not JSON, not an object, no Records array): none of it can be decoded.
var ErrNotEvent = errors.New("not an event")

// notEvent marks err as ErrNotEvent, keeping its message.
func notEvent(err error) error { return notEventError{err} }

type notEventError struct{ err error }

func (e notEventError) Error() string        { return e.err.Error() }
func (e notEventError) Unwrap() error        { return e.err }
func (e notEventError) Is(target error) bool { return target == ErrNotEvent }

// BatchError reports where a batch stopped: every change before Index was
// applied durably; the change at Index failed with Err, and none after it is
// claimed.
type BatchError struct {
	Index int
	Err   error
}

func (e *BatchError) Error() string { return fmt.Sprintf("change %d: %v", e.Index, e.Err) }
func (e *BatchError) Unwrap() error { return e.Err }

// UnknownTypeError is a change whose image has no entity type, or one that no
// handler is registered for, under the FailUnknown policy. It is permanent.
type UnknownTypeError struct {
	Type string // empty when the attribute is missing
	Key  string // the item's keys, rendered for people
}

func (e *UnknownTypeError) Error() string {
	if e.Type == "" {
		return "item " + e.Key + ": no entity type"
	}
	return fmt.Sprintf("item %s: no handler for entity type %s", e.Key, quote.Value(e.Type))
}

// Is makes UnknownTypeError match ErrPermanent.
func (e *UnknownTypeError) Is(target error) bool { return target == ErrPermanent }

// PanicError is a panic recovered while handling a change.
type PanicError struct {
	Value any
	Stack []byte
}

// Recover turns a panic of the function that defers it, one with a named
// error result, into a *PanicError in that result, with its stack:
//
//	defer pipeline.Recover(&err)
func Recover(err *error) {
	if r := recover(); r != nil {
		*err = &PanicError{Value: r, Stack: debug.Stack()}
	}
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Is makes PanicError match ErrPermanent: code that panics on an input will
// panic on it again.
func (e *PanicError) Is(target error) bool { return target == ErrPermanent }
