package stream

import (
	"bytes"
	"sync"
)

// bufPool keeps the buffers stream rewriters log what they passed in
// (FoldAt bounds how much); one kept over maxPooled is dropped.
var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooled = 1 << 20

// GetBuf returns an empty buffer from the pool.
func GetBuf() *bytes.Buffer {
	b := bufPool.Get().(*bytes.Buffer)
	b.Reset()
	return b
}

// PutBuf gives b back to the pool (nil is ignored); b must not be used
// after.
func PutBuf(b *bytes.Buffer) {
	if b == nil || b.Cap() > maxPooled {
		return
	}
	b.Reset()
	bufPool.Put(b)
}
