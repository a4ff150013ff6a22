//go:build !linux

package store

import "os"

// syncsMappings: elsewhere fsync may leave the pages written through a
// shared mapping unwritten, so every group runs db.Sync (msync).
const syncsMappings = false

// fdatasync writes f to the disk (fsync where fdatasync is not offered).
func fdatasync(f *os.File) error { return f.Sync() }
