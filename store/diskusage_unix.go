//go:build unix

package store

import (
	"io/fs"
	"syscall"
)

// allocated is the space a file takes on disk: its allocated blocks, which
// for a sparse file (Badger preallocates its logs) are fewer than its length.
func allocated(info fs.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return int64(st.Blocks) * 512 // st_blocks counts 512-byte units, whatever the block size
	}
	return info.Size()
}
