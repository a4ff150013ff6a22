package store

import (
	"bytes"
	"sync"
)

// holdCache keeps the last holds decoded from their records (h/<id>),
// so that the answer path decodes a hold's JSON once, not once per step:
// a confirmation reads the hold in its claim, its begin and its settle,
// and the decoding was a tenth of the gate's CPU per confirmation when
// measured from outside.
//
// Why a cached record is the record: a hold's own record is written once,
// by the Put that makes it, and never rewritten (what changes goes to its
// progress record, p/<id>, which is read every time); its id is random and
// Put refuses an id already stored, so an id names one record for as long
// as the process lives. A reader still looks the key up in its own
// transaction before it takes the cached copy, so a record gone (expired,
// deleted by retention) is gone for it, and the key stays in the
// transaction's read set for conflict detection, as before. The cache
// fills from reads only: what it holds went through decodeHold.
//
// A hit is copied, its byte slices with it: callers own the Hold they
// get, as they did when each read decoded afresh.
type holdCache struct {
	mu    sync.Mutex
	holds map[string]Hold
	order []string // ids in the order cached; the oldest leaves first
	next  int      // where the next id goes in order, once it is full
}

// holdCacheSize bounds the cache: enough for the holds answered at once,
// small in memory (a decoded hold is its call, its card and its
// arguments, a few KB).
const holdCacheSize = 1024

func newHoldCache() *holdCache {
	return &holdCache{holds: make(map[string]Hold, holdCacheSize)}
}

// get returns a copy of the cached hold with id.
func (c *holdCache) get(id string) (Hold, bool) {
	if c == nil {
		return Hold{}, false
	}
	c.mu.Lock()
	h, ok := c.holds[id]
	c.mu.Unlock()
	if !ok {
		return Hold{}, false
	}
	return cloneHold(h), true
}

// names returns what holdNamesOf reads of the cached hold with id.
func (c *holdCache) names(id string) (*Hold, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	h, ok := c.holds[id]
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	return &Hold{ID: id, StepID: h.StepID, Owner: h.Owner, Tenant: h.Tenant, Policy: h.Policy, Action: h.Action, Kind: h.Kind, Protocol: h.Protocol}, true
}

// put caches a copy of h, decoded from the record of id.
func (c *holdCache) put(id string, h *Hold) {
	if c == nil {
		return
	}
	cp := cloneHold(*h)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.holds[id]; ok {
		return
	}
	if len(c.order) < holdCacheSize {
		c.order = append(c.order, id)
	} else {
		delete(c.holds, c.order[c.next])
		c.order[c.next] = id
		c.next = (c.next + 1) % holdCacheSize
	}
	c.holds[id] = cp
}

// cloneHold is h with its byte slices (and Filed) copied.
func cloneHold(h Hold) Hold {
	h.Shown = bytes.Clone(h.Shown)
	h.Call = bytes.Clone(h.Call)
	h.Arguments = bytes.Clone(h.Arguments)
	h.Message = bytes.Clone(h.Message)
	h.Values = bytes.Clone(h.Values)
	h.Reply = bytes.Clone(h.Reply)
	if h.Filed != nil {
		h.Filed = append([]string(nil), h.Filed...)
	}
	return h
}
