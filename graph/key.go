package graph

import (
	"fmt"
	"reflect"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// Reducer says how the writes to a key are folded into its value. The zero
// Reducer is LastValue: the key takes the value written, and two writes in
// one step are an error.
type Reducer[T any] struct {
	fold func(current, update T) T
	// clip, for slice values, caps a view's capacity at its length so that an
	// append by a reader never writes into the state's backing array.
	clip func(*T)
}

// LastValue is the default reducer: a write replaces the value, and at most
// one task may write the key in a step.
func LastValue[T any]() Reducer[T] { return Reducer[T]{} }

// Reduce folds each write into the value with fn(current, update). Writes of
// one step are folded in task order, so fn need not be commutative; it must be
// deterministic, because threads are rebuilt by folding stored writes again.
// fn must not change the elements of current in place (readers share them);
// appending is fine.
func Reduce[T any](fn func(current, update T) T) Reducer[T] {
	return Reducer[T]{fold: fn}
}

// Append appends every write to a slice key.
func Append[E any]() Reducer[[]E] {
	return Reducer[[]E]{fold: func(cur, upd []E) []E { return append(cur, upd...) }, clip: clipSlice[E]}
}

// ReduceSlice is Reduce for a slice key: fn may append to current.
func ReduceSlice[E any](fn func(current, update []E) []E) Reducer[[]E] {
	return Reducer[[]E]{fold: fn, clip: clipSlice[E]}
}

func clipSlice[E any](p *[]E) { *p = (*p)[:len(*p):len(*p)] }

// Key is a typed key of state S holding a T: a name (used in checkpoints and
// streams), where the value lives in S, and a reducer. Declare each key once,
// as a package variable, and pass it to New.
type Key[S, T any] struct {
	name    string
	ptr     func(*S) *T
	reducer Reducer[T]
	// items, for a key streamed as messages, lists a write's elements.
	items func(T) []any
}

// Field declares a key of state S named name, stored in the field ptr selects.
func Field[S, T any](name string, ptr func(*S) *T, r Reducer[T]) *Key[S, T] {
	return &Key[S, T]{name: name, ptr: ptr, reducer: r}
}

// SliceKey is a Key whose value is a slice, with Add for appending elements.
type SliceKey[S, E any] struct{ *Key[S, []E] }

// SliceField declares a slice key; r is usually Append or a message reducer.
func SliceField[S, E any](name string, ptr func(*S) *[]E, r Reducer[[]E]) SliceKey[S, E] {
	if r.clip == nil {
		r.clip = clipSlice[E]
	}
	return SliceKey[S, E]{Field(name, ptr, r)}
}

// AsMessages marks the key as holding a conversation: in ModeMessages, a
// stream yields each element a node writes to it, after the node's step,
// unless the node streamed message chunks itself (a model node that
// streams its tokens). LangGraph's messages mode does the same for every
// message written to the state. It returns k.
func (k SliceKey[S, E]) AsMessages() SliceKey[S, E] {
	k.items = func(v []E) []any {
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = e
		}
		return out
	}
	return k
}

// Add writes elements to the key: the write is the slice of them, folded by
// the key's reducer.
func (k SliceKey[S, E]) Add(elems ...E) Write[S] { return k.Set(elems) }

// Name is the key's name.
func (k *Key[S, T]) Name() string { return k.name }

// Get reads the key's value from s.
func (k *Key[S, T]) Get(s *S) T { return *k.ptr(s) }

// Put sets the key's value in s, bypassing the reducer: for building a
// state value outside a run, such as a Send's input.
func (k *Key[S, T]) Put(s *S, v T) { *k.ptr(s) = v }

// Set writes v to the key. For a LastValue key the key takes v; otherwise v is
// folded in by the key's reducer. Setting the zero value is a write like any
// other: presence is explicit.
func (k *Key[S, T]) Set(v T) Write[S] { return &keyWrite[S, T]{k: k, v: v} }

// Overwrite writes v to the key bypassing its reducer. Two overwrites of one
// key in a step are an error.
func (k *Key[S, T]) Overwrite(v T) Write[S] { return &keyWrite[S, T]{k: k, v: v, overwrite: true} }

// Write is one typed write to a key of S, made by Key.Set, Key.Overwrite or
// SliceKey.Add.
type Write[S any] interface {
	key() AnyKey[S]
	value() any
	isOverwrite() bool
}

type keyWrite[S, T any] struct {
	k         *Key[S, T]
	v         T
	overwrite bool
}

func (w *keyWrite[S, T]) key() AnyKey[S]    { return w.k }
func (w *keyWrite[S, T]) value() any        { return w.v }
func (w *keyWrite[S, T]) isOverwrite() bool { return w.overwrite }

// AnyKey is any key of state S, whatever its value type: what New takes.
// Only this package's keys implement it.
type AnyKey[S any] interface {
	Name() string
	// self is the *Key behind a key value (a SliceKey wraps one).
	self() AnyKey[S]
	isLastValue() bool
	// apply folds one step's writes to this key into s, in order.
	apply(s *S, ws []Write[S]) error
	clipped(s S) S
	encodeValue(s *S, c checkpoint.Codec) ([]byte, error)
	decodeValue(s *S, c checkpoint.Codec, b []byte) error
	encodeWrite(w Write[S], c checkpoint.Codec) ([]byte, error)
	decodeFold(s *S, c checkpoint.Codec, b []byte) error
	decodeWrite(c checkpoint.Codec, b []byte, overwrite bool) (Write[S], error)
	valueType() reflect.Type
	// clips reports whether the key's values are slices that readers get
	// clipped to their length (see clipped).
	clips() bool
	// messageItems lists the elements of a write to a key marked
	// AsMessages, and nil for any other key.
	messageItems(w Write[S]) []any
}

func (k *Key[S, T]) messageItems(w Write[S]) []any {
	if k.items == nil {
		return nil
	}
	return k.items(w.(*keyWrite[S, T]).v)
}

func (k *Key[S, T]) self() AnyKey[S] { return k }

func (k *Key[S, T]) isLastValue() bool { return k.reducer.fold == nil }

func (k *Key[S, T]) apply(s *S, ws []Write[S]) error {
	p := k.ptr(s)
	for _, w := range ws {
		if w.isOverwrite() {
			*p = w.(*keyWrite[S, T]).v
			return nil
		}
	}
	if k.reducer.fold == nil {
		*p = ws[len(ws)-1].(*keyWrite[S, T]).v
		return nil
	}
	for _, w := range ws {
		*p = k.reducer.fold(*p, w.(*keyWrite[S, T]).v)
	}
	return nil
}

func (k *Key[S, T]) clips() bool { return k.reducer.clip != nil }

func (k *Key[S, T]) clipped(s S) S {
	if k.reducer.clip != nil {
		k.reducer.clip(k.ptr(&s))
	}
	return s
}

func (k *Key[S, T]) encodeValue(s *S, c checkpoint.Codec) ([]byte, error) {
	return c.Marshal(k.ptr(s))
}

func (k *Key[S, T]) decodeValue(s *S, c checkpoint.Codec, b []byte) error {
	var v T
	if err := c.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("decode key %q: %w", k.name, err)
	}
	*k.ptr(s) = v
	return nil
}

func (k *Key[S, T]) encodeWrite(w Write[S], c checkpoint.Codec) ([]byte, error) {
	return c.Marshal(&w.(*keyWrite[S, T]).v)
}

func (k *Key[S, T]) decodeFold(s *S, c checkpoint.Codec, b []byte) error {
	var v T
	if err := c.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("decode write to key %q: %w", k.name, err)
	}
	p := k.ptr(s)
	if k.reducer.fold == nil {
		*p = v
	} else {
		*p = k.reducer.fold(*p, v)
	}
	return nil
}

func (k *Key[S, T]) valueType() reflect.Type {
	var zero T
	return reflect.TypeOf(&zero).Elem()
}

func (k *Key[S, T]) decodeWrite(c checkpoint.Codec, b []byte, overwrite bool) (Write[S], error) {
	w := &keyWrite[S, T]{k: k, overwrite: overwrite}
	if err := c.Unmarshal(b, &w.v); err != nil {
		return nil, fmt.Errorf("decode write to key %q: %w", k.name, err)
	}
	return w, nil
}
