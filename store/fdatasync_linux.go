package store

import (
	"os"
	"syscall"
)

// syncsMappings: on Linux fdatasync writes out the pages written through
// a shared mapping of the file too, as Badger writes its logs.
const syncsMappings = true

// fdatasync writes f's data (not its times) to the disk.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
