package caddymodule

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/wire/shape"
)

// A policy is known by its identity (policies.Policy.Identity: its name
// and the hash of its bytes), never by its file's path: holds record it,
// and a hold made under a byte-identical file at another path (another
// replica's layout, a file moved in a config reload) is answered under
// the same policy. The path is only where the app reads it from, watches
// it, and what the logs name.
//
// The app watches every policy file its handlers load (policy_poll): an
// edit takes effect without a config reload (which Caddy skips when the
// config itself is unchanged). The new file is read twice, one poll
// apart, and swapped in only when both reads agree (an editor's write in
// several steps is not read half-done) and it loads; a file that does
// not load is logged once and the policy before it stays. Holds made
// under the old version are then judged as after a reload
// (gate/policyversion.go).

// DefaultPolicyPoll is PolicyPoll's default.
const DefaultPolicyPoll = 2 * time.Second

// loadedPolicy is one version of a policy file, as handlers use it.
type loadedPolicy struct {
	policy *policies.Policy
	key    string       // policy.Identity()
	names  *shape.Names // its gated tools, searched in answers no adapter reads (nil: none)
}

// loaded is p as handlers use it.
func loaded(p *policies.Policy) *loadedPolicy {
	return &loadedPolicy{policy: p, key: p.Identity(), names: shape.NewNames(p.GatedTools())}
}

// policyFile is a policy file the app's handlers load, with the version
// they use now. Handlers read current on each request, so a swap takes
// effect at the next one.
type policyFile struct {
	path string
	cur  atomic.Pointer[loadedPolicy]

	// The watcher's own state (one goroutine).
	stat    fileStat // of the bytes current was read from
	pending []byte   // sha256 of bytes read once and not yet swapped in
	bad     []byte   // sha256 of bytes that did not load (logged once)
}

type fileStat struct {
	mod  time.Time
	size int64
}

// current is the version to use now.
func (f *policyFile) current() *loadedPolicy { return f.cur.Load() }

// lineage remembers, for this process's life and across config reloads,
// the file each policy identity was last read from, so a hold made under
// a version since edited is judged against the file as it reads now.
var lineage sync.Map // identity → clean path

// registerFile makes the policy p, read from the clean path, known to the
// app and returns the file handlers read it through. Two handlers naming
// one file share it.
func (a *App) registerFile(path string, p *policies.Policy) *policyFile {
	l := loaded(p)
	lineage.Store(l.key, path)
	a.live.polMu.Lock()
	defer a.live.polMu.Unlock()
	if a.live.files == nil {
		a.live.files = map[string]*policyFile{}
	}
	f := a.live.files[path]
	if f == nil {
		f = &policyFile{path: path}
		a.live.files[path] = f
	}
	f.cur.Store(l)
	if st, err := os.Stat(path); err == nil {
		f.stat = fileStat{st.ModTime(), st.Size()}
	}
	return f
}

// policy returns the policy a hold names by key, as it reads now: the
// one loaded with this very identity; else the file that identity was
// last read from, as it reads now (an edit since: the gate's version
// checks decide); else, for a hold made before identities, the file at
// that path; else the one policy loaded now under the same name (another
// replica's file, edited since). nil when none, or when the name is
// ambiguous.
func (a *App) policy(key string) *policies.Policy {
	a.live.polMu.RLock()
	defer a.live.polMu.RUnlock()
	for _, f := range a.live.files {
		if l := f.current(); l.key == key {
			return l.policy
		}
	}
	if path, ok := lineage.Load(key); ok {
		if f := a.live.files[path.(string)]; f != nil {
			return f.current().policy
		}
	}
	if f := a.live.files[key]; f != nil {
		return f.current().policy
	}
	name, _, ok := strings.Cut(key, "@")
	if !ok {
		return nil
	}
	var found *loadedPolicy
	for _, f := range a.live.files {
		l := f.current()
		if n, _, _ := strings.Cut(l.key, "@"); n != name {
			continue
		}
		if found != nil && found.key != l.key {
			return nil // two policies by that name: which one is unknown
		}
		found = l
	}
	if found == nil {
		return nil
	}
	return found.policy
}

// policyFileOf is the path a policy identity is read from now, for logs
// and the admin API ("" when no file of this app serves it).
func (a *App) policyFileOf(key string) string {
	a.live.polMu.RLock()
	defer a.live.polMu.RUnlock()
	for path, f := range a.live.files {
		if f.current().key == key {
			return path
		}
	}
	return ""
}

// watchPolicies polls the policy files every PolicyPoll until ctx ends.
func (a *App) watchPolicies(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(time.Duration(a.PolicyPoll))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		a.live.polMu.RLock()
		files := make([]*policyFile, 0, len(a.live.files))
		for _, f := range a.live.files {
			files = append(files, f)
		}
		a.live.polMu.RUnlock()
		for _, f := range files {
			a.pollPolicy(f)
		}
	}
}

// pollPolicy reads one file when it changed and swaps its new version in
// once two reads a poll apart agree and it loads.
func (a *App) pollPolicy(f *policyFile) {
	st, err := os.Stat(f.path)
	if err != nil {
		if f.bad == nil {
			a.logger.Error("policy file unreadable; the policy loaded before stays", zap.String("file", f.path), zap.Error(err))
			f.bad = []byte{}
		}
		return
	}
	if s := (fileStat{st.ModTime(), st.Size()}); s == f.stat && f.pending == nil {
		return
	}
	data, err := os.ReadFile(f.path)
	if err != nil {
		return // stat saw it a moment ago: the next poll tells
	}
	sum := sha256.Sum256(data)
	old := f.current()
	if bytes.Equal(sum[:], digestBytes(old.policy)) {
		f.stat, f.pending, f.bad = fileStat{st.ModTime(), st.Size()}, nil, nil // touched, or edited back
		return
	}
	if !bytes.Equal(sum[:], f.pending) {
		f.pending = sum[:] // read again at the next poll: it may be half-written
		return
	}
	if bytes.Equal(sum[:], f.bad) {
		return // said already
	}
	p, err := policies.Parse(f.path, data)
	if err != nil {
		f.bad = sum[:]
		a.logger.Error("policy file changed but does not load; the policy loaded before stays", zap.String("file", f.path),
			zap.String("version", old.policy.Version()), zap.Error(err))
		return
	}
	l := loaded(p)
	lineage.Store(l.key, f.path)
	f.cur.Store(l)
	f.stat, f.pending, f.bad = fileStat{st.ModTime(), st.Size()}, nil, nil
	a.logger.Info("policy file changed: new version in effect", zap.String("file", f.path),
		zap.String("policy", l.key), zap.String("previous", old.key), zap.Int("actions", len(p.Actions)))
}

// digestBytes is the sha256 of the bytes p was read from.
func digestBytes(p *policies.Policy) []byte {
	b, _ := hex.DecodeString(p.Digest())
	return b
}
