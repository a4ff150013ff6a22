// Package memo remembers the answers of a pure function of a few strings
// for the last few distinct inputs: the request paths a route sees again
// and again, whose reading costs microseconds where a lookup costs tens of
// nanoseconds.
//
// A Table has a fixed number of slots. An input's hash picks one; the
// slot holds a single entry (its whole key and its answer), replaced
// whole through an atomic pointer and never changed once stored, so that
// readers take no lock. A lookup whose slot holds another key computes
// the answer and stores its own entry: a miss costs what the function
// does plus one small allocation. The key is compared in full, so two
// inputs that differ in any part never share an answer; what the function
// reads besides its key (a route's configuration, say) must be fixed for
// the Table's life, so a Table belongs to one such configuration.
package memo

import (
	"hash/maphash"
	"sync/atomic"
)

// Slots is how many entries a Table keeps.
const Slots = 16

// MaxKey bounds the bytes of a key a Table keeps alive: a longer key (an
// attacker's path, say) is computed each time and never stored.
const MaxKey = 256

// Key is a function's input: up to three strings (a method, a path, a
// query), compared part by part.
type Key struct{ A, B, C string }

func (k Key) size() int { return len(k.A) + len(k.B) + len(k.C) }

// Table remembers answers of type V. The zero Table is empty and ready.
type Table[V any] struct {
	slots [Slots]atomic.Pointer[entry[V]]
}

type entry[V any] struct {
	key Key
	val V
}

var seed = maphash.MakeSeed()

// slot picks k's slot. Each part is hashed on its own and mixed in by
// position, so that ("ab", "c") and ("a", "bc") differ in the hash too
// (the comparison tells them apart in any case).
func slot(k Key) uint64 {
	h := maphash.String(seed, k.A)
	h = h*31 + maphash.String(seed, k.B)
	h = h*31 + maphash.String(seed, k.C)
	return h % Slots
}

// Get returns compute(k), from the table when it holds k's answer. compute
// must be a pure function of k (and of what is fixed for the table's
// life).
func (t *Table[V]) Get(k Key, compute func(Key) V) V {
	if t == nil || k.size() > MaxKey {
		return compute(k)
	}
	s := &t.slots[slot(k)]
	if e := s.Load(); e != nil && e.key == k {
		return e.val
	}
	v := compute(k)
	s.Store(&entry[V]{key: k, val: v})
	return v
}

// Cached reports whether the table holds an answer for k (for tests).
func (t *Table[V]) Cached(k Key) bool {
	if t == nil {
		return false
	}
	e := t.slots[slot(k)].Load()
	return e != nil && e.key == k
}
