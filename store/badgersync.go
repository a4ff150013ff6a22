package store

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dgraph-io/badger/v4"
)

// Group commit.
//
// Badger (v4.9.6) syncs the active memtable's write-ahead log inside
// writeToLSM once per transaction when SyncWrites is on, even when its
// write goroutine has batched many transactions together (doWrites), so
// concurrent answers never share a flush: each pays a whole fsync, one
// after the other. The store therefore opens Badger with SyncWrites off
// and makes every write durable itself, before it returns: a writer
// commits its transaction (written to the memtable's log, not yet synced),
// then waits for a sync group. One goroutine (syncLoop) takes the group
// whose waiters are present, syncs once, and releases them all; waiters
// that arrive meanwhile form the next group. So a burst of N answers costs
// about two syncs instead of N. A writer that finds no sync running syncs
// its group itself (it leads it), so a write alone, such as a held call's,
// is not handed to that goroutine and back (two wake-ups of a parked
// goroutine); a group that forms while it syncs goes to the goroutine.
//
// Why one sync covers every commit of its group: a commit returns after
// Badger's write goroutine has appended the transaction to the log files
// (the active memtable's .mem log, and the current .vlog for values above
// the ValueThreshold) and applied it to the memtable. db.Sync msyncs the
// active memtable's log and the current value-log file. A group's sync
// begins after each of its waiters' commits returned, so their entries
// are in those files, or in files Badger has since rotated away from:
// a memtable that filled up became immutable with its log unsynced (it
// is synced only when SyncWrites is on), and likewise a value-log file
// that reached ValueLogFileSize. After db.Sync the group therefore also
// fsyncs every .mem and .vlog file that is no longer the newest of its
// kind and that it has not synced since it stopped being written to
// (syncRotated). A rotated memtable's log is deleted only after its table
// was written and msynced and the manifest that names it synced (Badger's
// flush), so a log gone from the directory is covered by its table. On
// Linux fsync writes out pages dirtied through a shared mapping too,
// which is how Badger writes its logs. What a reader sees is the same as
// before: a read may see a write whose sync has not yet returned; no
// writer is told its write succeeded before it is on disk.
//
// A failed sync is final: every waiter of the group gets the error, and
// the store refuses every later write with ErrUnavailable. After a failed
// fsync Linux may have dropped the dirty pages and a retry could report
// success without them (the PostgreSQL fsync lesson); restarting the
// process replays the logs from what reached the disk.

// syncGroup is the waiters released by one sync.
type syncGroup struct {
	done chan struct{} // closed when the sync has returned
	err  error         // the sync's error, set before done closes
}

// groupSync collects waiters and syncs once per group.
type groupSync struct {
	sync func() error // db.Sync and the rotated files (or a test's hook)

	mu      sync.Mutex
	next    *syncGroup // the group the next sync covers; nil: none waiting
	running bool       // a sync is running (a leading writer's or the loop's)
	idle    *sync.Cond // on mu: broadcast when running falls to false
	failed  error      // the first sync error: writes are refused
	closed  bool       // Close has begun: no new waiters

	wake chan struct{} // a first waiter wakes the loop (buffered, one)
	stop chan struct{} // closed by close: the loop drains and returns
	done chan struct{} // closed by the loop when it has returned

	syncs uint64 // syncs run, for tests and benchmarks (under mu)
}

func newGroupSync(syncFn func() error) *groupSync {
	g := &groupSync{
		sync: syncFn,
		wake: make(chan struct{}, 1),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	g.idle = sync.NewCond(&g.mu)
	go g.loop()
	return g
}

// wait returns once a sync that began after wait was called has returned:
// nil when it succeeded. Call it after a commit, before telling anyone the
// write succeeded. It does not take a context: a caller whose commit
// returned must not answer before its sync, and a sync is short.
func (g *groupSync) wait() error {
	g.mu.Lock()
	if g.failed != nil {
		err := g.failed
		g.mu.Unlock()
		return err
	}
	if g.closed {
		g.mu.Unlock()
		return unavailable(badger.ErrDBClosed)
	}
	grp := g.next
	if grp == nil {
		grp = &syncGroup{done: make(chan struct{})}
		g.next = grp
	}
	if !g.running {
		// No sync runs: lead this group. Every waiter in it called wait
		// before this sync begins, as the loop's would.
		g.next, g.running = nil, true
		g.mu.Unlock()
		g.syncGroup(grp)
		g.finished()
		return grp.err
	}
	// A sync runs: this group goes next, run by the loop once that one
	// has finished (finished wakes it).
	g.mu.Unlock()
	<-grp.done
	return grp.err
}

// finished ends a sync (running falls to false) and hands the group that
// formed meanwhile, if any, to the loop; after close, when the loop may
// have returned, it syncs that group itself.
func (g *groupSync) finished() {
	for {
		g.mu.Lock()
		grp := g.next
		if grp == nil || !g.closed {
			g.running = false
			g.idle.Broadcast()
			g.mu.Unlock()
			if grp != nil {
				select {
				case g.wake <- struct{}{}:
				default:
				}
			}
			return
		}
		g.next = nil
		g.mu.Unlock()
		g.syncGroup(grp)
	}
}

// healthy returns the error that refuses writes after a failed sync.
func (g *groupSync) healthy() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.failed
}

// loop runs the syncs, one group at a time, until close; then it syncs
// the group still waiting, if any, and returns.
func (g *groupSync) loop() {
	defer close(g.done)
	for {
		select {
		case <-g.wake:
			g.round()
		case <-g.stop:
			g.round()
			return
		}
	}
}

// round takes the waiting group, syncs, and releases it, unless a sync
// runs (a leading writer's, which hands on what waits when it finishes).
func (g *groupSync) round() {
	g.mu.Lock()
	grp := g.next
	if grp == nil || g.running {
		g.mu.Unlock()
		return
	}
	g.next, g.running = nil, true
	g.mu.Unlock()
	g.syncGroup(grp)
	g.finished()
}

// syncGroup syncs once for grp and releases it. The caller has set
// running.
func (g *groupSync) syncGroup(grp *syncGroup) {
	g.mu.Lock()
	failed := g.failed
	g.mu.Unlock()
	err := failed
	if err == nil {
		if err = g.sync(); err != nil {
			err = unavailable(fmt.Errorf("syncing to disk: %w", err))
		}
	}
	g.mu.Lock()
	g.syncs++
	if err != nil && g.failed == nil {
		g.failed = err
	}
	g.mu.Unlock()
	grp.err = err
	close(grp.done)
}

// close lets no new waiter in, syncs for the ones waiting, and waits for
// the loop to return. Closing twice is harmless.
func (g *groupSync) close() {
	g.mu.Lock()
	already := g.closed
	g.closed = true
	g.mu.Unlock()
	if !already {
		close(g.stop)
	}
	<-g.done
	// A leading writer may still be syncing (and, the loop gone, syncs
	// what waits after it): the store closes once it has finished.
	g.mu.Lock()
	for g.running {
		g.idle.Wait()
	}
	g.mu.Unlock()
}

// count is the number of syncs run.
func (g *groupSync) count() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.syncs
}

// rotated remembers the log files already synced after they stopped being
// written to, so each is synced once.
type rotated struct {
	dir    string
	synced map[string]bool // file name → synced since it was rotated

	// d is dir, kept open between syncs (used by one sync at a time:
	// groupSync.running):
	// the listing rewinds it instead of opening the directory again,
	// which was most of the listing's cost, about 8% of the gate's CPU
	// per held call when measured from outside.
	d *os.File

	// The value log. db.Sync msyncs the current value-log file as well
	// as the memtable's log, and on ext4 that costs a flush of the disk
	// even when nothing was written to it (0.3 ms on this machine's
	// disk): a second flush on every held call. Values below
	// valueThreshold never go to the value log, and the store's records
	// are far smaller, so a group syncs only the active memtable's log
	// (fdatasync of its file: pages written through Badger's shared
	// mapping are the file's pages) unless a value large enough for the
	// value log may have been committed since the last db.Sync
	// (vlogWritten, set by the committer before it waits for its group)
	// or the value-log GC, which rewrites values into the value log, is
	// running or ran since (gcRunning, and vlogWritten when it ends).
	vlogWritten atomic.Bool
	gcRunning   atomic.Int32
	mem         *os.File // the active memtable's log, kept open
	memName     string   // its name

	fullSyncs, memSyncs atomic.Uint64 // syncs of each kind, for tests
}

// syncDB is one group's sync: Badger's own (the active memtable's log and
// the current value-log file), then the log files rotated since.
func (r *rotated) syncDB(db *badger.DB) error {
	// Swapped after the group was taken: a committer that set it before
	// it waited is in this group or a later one, which sees it.
	full := r.vlogWritten.Swap(false) || r.gcRunning.Load() > 0 || r.dir == "" || !syncsMappings
	if full {
		r.fullSyncs.Add(1)
		if err := db.Sync(); err != nil {
			return err
		}
		return r.syncRotated(false)
	}
	r.memSyncs.Add(1)
	if err := r.syncRotated(true); err != nil {
		return err
	}
	// A GC that began meanwhile may have put entries pointing into the
	// value log in the memtable's log just synced: sync the value log
	// too, as db.Sync would have (it also syncs the memtable's log
	// first). GC raises gcRunning before it writes and sets vlogWritten
	// before it lowers it, so one of the two shows here.
	if r.gcRunning.Load() > 0 || r.vlogWritten.Load() {
		r.fullSyncs.Add(1)
		return db.Sync()
	}
	return nil
}

// syncRotated fsyncs each .mem and .vlog file that is not the newest of
// its kind and not synced before. It runs after db.Sync: a file that was
// the newest when db.Sync ran is covered by it, and one rotated before is
// older than the newest now. With active (instead of db.Sync) it also
// fdatasyncs the newest .mem file: every commit of the group returned
// before this listing, so its entries are in a file listed here (the
// newest, or one rotated before it), or in one Badger has deleted after
// flushing it to a synced table.
func (r *rotated) syncRotated(active bool) error {
	if r.dir == "" {
		return nil
	}
	entries, err := r.list()
	if err != nil {
		return fmt.Errorf("listing logs: %w", err)
	}
	type logFile struct {
		name string
		fid  uint64
	}
	newest := map[string]uint64{}
	var logs []logFile
	present := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		ext := filepath.Ext(name)
		if ext != ".mem" && ext != ".vlog" {
			continue
		}
		fid, err := strconv.ParseUint(strings.TrimSuffix(name, ext), 10, 64)
		if err != nil {
			continue
		}
		present[name] = true
		logs = append(logs, logFile{name, fid})
		newest[ext] = max(newest[ext], fid)
	}
	for name := range r.synced {
		if !present[name] {
			delete(r.synced, name) // deleted by Badger: forget it
		}
	}
	if active {
		if err := r.syncMem(newest[".mem"], present); err != nil {
			return err
		}
	}
	for _, l := range logs {
		if l.fid == newest[filepath.Ext(l.name)] || r.synced[l.name] {
			continue
		}
		if err := fsyncFile(filepath.Join(r.dir, l.name)); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // flushed to a table (synced) and deleted meanwhile
			}
			return err
		}
		r.synced[l.name] = true
	}
	return nil
}

// list reads the directory's entries afresh: rewinding an open directory
// makes the next read list it again from the start (getdents after
// lseek to 0), as opening it would.
func (r *rotated) list() ([]os.DirEntry, error) {
	if r.d == nil {
		d, err := os.Open(r.dir)
		if err != nil {
			return nil, err
		}
		r.d = d
	} else if _, err := r.d.Seek(0, io.SeekStart); err != nil {
		r.close()
		return nil, err
	}
	entries, err := r.d.ReadDir(-1)
	if err != nil {
		r.close()
		return nil, err
	}
	return entries, nil
}

// close closes the kept directory and memtable log, if open.
func (r *rotated) close() {
	if r.d != nil {
		r.d.Close()
		r.d = nil
	}
	r.closeMem()
}

func (r *rotated) closeMem() {
	if r.mem != nil {
		r.mem.Close()
		r.mem, r.memName = nil, ""
	}
}

// syncMem fdatasyncs the active memtable's log, the .mem file numbered
// fid, keeping it open until another is the newest.
func (r *rotated) syncMem(fid uint64, present map[string]bool) error {
	var name string
	for n := range present {
		if filepath.Ext(n) == ".mem" {
			if f, err := strconv.ParseUint(strings.TrimSuffix(n, ".mem"), 10, 64); err == nil && f == fid {
				name = n
			}
		}
	}
	if name == "" {
		return nil // no memtable log (none written yet)
	}
	if name != r.memName {
		r.closeMem()
		f, err := os.OpenFile(filepath.Join(r.dir, name), os.O_RDWR, 0)
		if errors.Is(err, os.ErrNotExist) {
			return nil // flushed to a table (synced) and deleted meanwhile
		}
		if err != nil {
			return fmt.Errorf("syncing %s: %w", name, err)
		}
		r.mem, r.memName = f, name
	}
	if err := fdatasync(r.mem); err != nil {
		return fmt.Errorf("syncing %s: %w", name, err)
	}
	return nil
}

func fsyncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("syncing %s: %w", filepath.Base(path), err)
	}
	return nil
}
