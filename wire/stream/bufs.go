package stream

import (
	"bytes"
	"sync"
)

// bufPool is the module's one pool of byte buffers: the stream
// rewriters' logs of what they passed (FoldAt bounds how much), the
// ResponseWriter's held JSON bodies and partial events, MCP results held
// for rewriting, and the gated request bodies the Caddy handlers read. A
// buffer that grew over maxPooled is left to the garbage collector rather
// than kept for every later request (STYLE.md: cap the size before Put).
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
