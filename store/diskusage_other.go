//go:build !unix

package store

import "io/fs"

// allocated is the space a file takes on disk; without st_blocks, its length.
func allocated(info fs.FileInfo) int64 { return info.Size() }
