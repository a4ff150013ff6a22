// Package shape holds the checks of a response's shape that every adapter
// and the guard share: the byte search for the gated tools' names (Names),
// and whether a JSON answer or a stream event is one protocol's own and no
// other's (Reads, EventMarks). A body the gate does not read as its
// adapter's answer must not carry a gated call (issue 15 §2): another
// provider's client would read calls the adapter never saw. Nothing here
// is parsed on the fast path: the shape is asked only of bytes that name a
// gated tool.
package shape

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/wire/keyscan"
)

// Names is the byte search for the gated tools' names in a response the
// gate has no adapter for. Build it once per policy (NewNames); it is
// safe for concurrent use.
type Names struct {
	names [][]byte
	max   int // the longest name, in bytes

	// words finds the names made of name bytes only (every tool name a
	// provider accepts) in one pass over the bytes: such a name is there
	// as a whole word exactly when a maximal run of name bytes equals it.
	// The value is the name's place in names.
	words map[string]int
	// first and last filter the runs looked up in words: bit l of
	// first[c] is set when some word is l bytes long (l < 64) and begins
	// with c; last the same for its last byte.
	first, last [256]uint64
	// lengths has bit l set when some word is l bytes long; shortest is
	// the shortest word's length.
	lengths  uint64
	shortest int
	// others are the places of the names with another byte in them ('.',
	// say), each searched on its own as before; othersMax the longest.
	others    []int
	othersMax int
}

// NewNames returns the search for tools (the policy's gated tools); nil
// when there are none, which finds nothing.
func NewNames(tools []string) *Names {
	if len(tools) == 0 {
		return nil
	}
	n := &Names{words: map[string]int{}}
	for _, t := range tools {
		if t == "" {
			continue
		}
		k := len(n.names)
		n.names = append(n.names, []byte(t))
		n.max = max(n.max, len(t))
		switch {
		case !allNameBytes(t) || len(t) >= 64:
			n.others = append(n.others, k)
			n.othersMax = max(n.othersMax, len(t))
		default:
			if _, dup := n.words[t]; !dup {
				n.words[t] = k
				n.lengths |= 1 << len(t)
				if n.shortest == 0 || len(t) < n.shortest {
					n.shortest = len(t)
				}
				n.first[t[0]] |= 1 << len(t)
				n.last[t[len(t)-1]] |= 1 << len(t)
			}
		}
	}
	return n
}

func allNameBytes(s string) bool {
	for i := 0; i < len(s); i++ {
		if !nameByte[s[i]] {
			return false
		}
	}
	return true
}

// Named returns the gated tool b names, or "": a name as a whole word (no
// name byte right before or after it; b's own ends count as a word's
// end, so a name cut by the end of a write is found), or "\u" escapes
// that could spell one (keyscan.HasEscape: no JSON encoder escapes an ASCII
// letter, digit or underscore, so only a body made to walk around the
// gate has them), which returns "an escaped name". When b names several,
// the one given first to NewNames is returned. Nothing is parsed: one
// pass over b for the names of name bytes (a search per name cost seven
// times as much with the test policy's seven names), and a bytes.Index
// for each other name.
func (n *Names) Named(b []byte) string {
	if n == nil {
		return ""
	}
	best := n.firstWord(b)
	for _, k := range n.others {
		if best >= 0 && k > best {
			break
		}
		if wholeWord(b, n.names[k]) {
			best = k
			break
		}
	}
	if best >= 0 {
		return string(n.names[best])
	}
	if keyscan.HasEscape(b) {
		return "an escaped name"
	}
	return ""
}

// firstWord returns the place of the first name (in NewNames' order) that
// is a maximal run of name bytes in b, or -1. It reads b 64 bytes at a
// time as a mask of their name bytes (nameMask) and turns only at the
// ends of runs at least as long as the shortest name: most of a JSON
// body's words are shorter. A byte-by-byte loop, with its branch at each
// word's edges, spent ~1.6 ns a byte, the most of what the gate added to
// a stream that passes (an event's bytes are all searched).
func (n *Names) firstWord(b []byte) int {
	best := -1
	if len(n.words) == 0 {
		return best
	}
	// look looks up the run of l bytes that ends before end.
	look := func(end, l int) bool {
		if l >= 64 || n.lengths&(1<<l) == 0 {
			return false
		}
		start := end - l
		if n.first[b[start]]&n.last[b[end-1]]&(1<<l) == 0 {
			return false
		}
		if k, ok := n.words[string(b[start:end])]; ok && (best < 0 || k < best) {
			best = k
			return k == 0
		}
		return false
	}
	var prev, prevLong uint64 // the previous block's mask and long mask
	carry := 0                // the name bytes that end the blocks before
	for base := 0; base < len(b); base += 64 {
		m := nameMask(b[base:])
		// long: bit i is set when bytes i-shortest+1 to i are all name bytes.
		long := m
		for s := 1; s < n.shortest; s++ {
			long &= m<<s | prev>>(64-s)
		}
		// ends: a byte that is no name byte after one that is, that one
		// ending a run at least the shortest name long.
		ends := ^m & (long<<1 | prevLong>>63)
		for ends != 0 {
			e := bits.TrailingZeros64(ends)
			ends &= ends - 1
			l := carry
			if e > 0 {
				if l = bits.LeadingZeros64(^(m << (64 - e))); l == e {
					l += carry // the run began in a block before
				}
			}
			if look(base+e, l) {
				return 0
			}
		}
		if m == ^uint64(0) {
			carry += 64
		} else {
			carry = bits.LeadingZeros64(^m)
		}
		prev, prevLong = m, long
	}
	if len(b)%64 == 0 && carry >= n.shortest && look(len(b), carry) {
		return 0 // a run to the end of b; a shorter last block ends it in its padding
	}
	return best
}

// nameMask returns the mask of b's first 64 bytes (bit i for b[i]) that
// are name bytes; bytes past b's end are none.
func nameMask(b []byte) uint64 {
	var m uint64
	for j := 0; j < 8 && 8*j < len(b); j++ {
		var w uint64
		if len(b)-8*j >= 8 {
			w = binary.LittleEndian.Uint64(b[8*j:])
		} else {
			var tail [8]byte // zeros: no name bytes
			copy(tail[:], b[8*j:])
			w = binary.LittleEndian.Uint64(tail[:])
		}
		m |= gather(nameLanes(w)) << (8 * j)
	}
	return m
}

// gather moves the high bit of each of x's eight lanes to bits 0-7, lane
// 0's to bit 0.
func gather(x uint64) uint64 {
	return ((x >> 7) * 0x0102040810204080) >> 56
}

const (
	lanesOne  = 0x0101010101010101
	lanesLow  = 0x7f7f7f7f7f7f7f7f
	lanesHigh = 0x8080808080808080
)

// nameLanes returns, for the eight bytes of w, the high bit of each lane
// whose byte is a name byte (nameByte): a letter, a digit, '_' or '-'.
// Each range test adds to the lane's low seven bits (no carry leaves a
// lane): v+0x80-lo has the high bit when v >= lo, v+0x7f-hi when v > hi.
// Bytes of 0x80 and up are none.
func nameLanes(w uint64) uint64 {
	x := w & lanesLow
	f := x | 0x20*lanesOne // 'A'-'Z' onto 'a'-'z'; nothing else lands there
	letter := (f + (0x80-'a')*lanesOne) &^ (f + (0x7f-'z')*lanesOne)
	digit := (x + (0x80-'0')*lanesOne) &^ (x + (0x7f-'9')*lanesOne)
	under := (x + (0x80-'_')*lanesOne) &^ (x + (0x7f-'_')*lanesOne)
	dash := (x + (0x80-'-')*lanesOne) &^ (x + (0x7f-'-')*lanesOne)
	return (letter | digit | under | dash) & lanesHigh &^ w
}

// wholeWord reports whether name is in b with no name byte right before
// or after it.
func wholeWord(b, name []byte) bool {
	for i := 0; ; {
		j := bytes.Index(b[i:], name)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(name)
		if (start == 0 || !nameByte[b[start-1]]) && (end == len(b) || !nameByte[b[end]]) {
			return true
		}
		i = start + 1
	}
}

// nameByte holds the bytes a tool name may hold around a name: a name
// inside a longer one ("undelete_posts") is another tool.
var nameByte = func() (t [256]bool) {
	for c := range 256 {
		t[c] = keyscan.IsKeyByte(byte(c)) || c == '-'
	}
	return t
}()

// Window is how many bytes of the last write the next one is searched
// with, for a name (or a \u escape) cut between two writes.
func (n *Names) Window() int { return n.max + 6 }

// callKeys are the top-level keys some provider's answer carries calls
// under, folded to lower case: Chat's choices, Responses' output (and
// Bedrock Converse's), Anthropic's content, Gemini's candidates, Ollama's
// message, the Assistants API's required_action, and the call keys
// themselves where an answer could put them at the top.
var callKeys = []string{"choices", "output", "content", "candidates", "message", "required_action", "tool_calls", "function_call", "functioncall", "tooluse", "tool_use", "toolcalls"}

// IsCallKey reports whether name is, in any case, a top-level key some
// provider's answer carries calls under.
func IsCallKey(name string) bool {
	for _, c := range callKeys {
		if strings.EqualFold(name, c) {
			return true
		}
	}
	return false
}

// Reads reports whether an adapter whose answer is under answerKey reads
// body as its own answer: a JSON object with answerKey, an array, and no
// other provider's call key at its top, in any case (Go's encoding/json
// folds keys, U+017F and U+212A too, as strings.EqualFold does). A body in
// another provider's shape, or one that is two at once, is not: a client
// of that other shape would read calls the adapter never saw. The gate asks
// it of every JSON answer on a gated route, before the name search:
// readsTop reads a provider's usual answer without gjson.
func Reads(answerKey string, body []byte) bool {
	if r, sure := readsTop(answerKey, body); sure {
		return r
	}
	return readsParsed(answerKey, body)
}

// readsParsed is Reads by gjson's reading of body, for a body readsTop is
// not sure of.
func readsParsed(answerKey string, body []byte) bool {
	v := gjson.ParseBytes(body)
	if !v.IsObject() {
		return false
	}
	own, foreign := false, false
	v.ForEach(func(key, val gjson.Result) bool {
		name := key.String()
		switch {
		case strings.EqualFold(name, answerKey):
			own = val.IsArray() // Bedrock Converse's output is an object
			foreign = !own
		case IsCallKey(name):
			foreign = true
		}
		return !foreign
	})
	return own && !foreign
}

// Marks of the protocols a stream event can be read as.
const (
	MarkChat      = 1 << iota // a choices key (Chat's chunks)
	MarkResponses             // a type "response.…", or an item key (Responses' events)
	MarkAnthropic             // a type of Anthropic's events, or a content_block or message key
	MarkOther                 // any other provider's call key (callKeys), or not an object
)

// EventMarks returns the marks of every protocol whose clients read the
// event's data as theirs, keys compared in any case: an event one
// adapter reads must carry only its own. An event of plain ASCII keys is
// read by its top-level keys (eventMarksTop: 0.38-0.57 us a chunk against
// gjson's 0.84-1.5), any other by gjson as before.
func EventMarks(data []byte) int {
	if marks, sure := eventMarksTop(data); sure {
		return marks
	}
	return eventMarksParsed(data)
}

// eventMarksParsed is EventMarks by gjson's reading of data, for the data
// eventMarksTop is not sure of.
func eventMarksParsed(data []byte) int {
	v := gjson.ParseBytes(data)
	if !v.IsObject() {
		return MarkOther
	}
	marks := 0
	v.ForEach(func(key, val gjson.Result) bool {
		name := key.String()
		switch {
		case strings.EqualFold(name, "choices"):
			marks |= MarkChat
		case strings.EqualFold(name, "item"):
			marks |= MarkResponses
		case strings.EqualFold(name, "content_block"), strings.EqualFold(name, "message"):
			marks |= MarkAnthropic
		case strings.EqualFold(name, "type"):
			switch typ := val.String(); {
			case strings.HasPrefix(typ, "response."):
				marks |= MarkResponses
			case AnthropicEvent(typ):
				marks |= MarkAnthropic
			}
		case IsCallKey(name):
			marks |= MarkOther
		}
		return true
	})
	return marks
}

// AnthropicEvent reports whether typ is the type of one of Anthropic's
// stream events.
func AnthropicEvent(typ string) bool { return anthropicEvents[typ] }

// anthropicEvents are the types of Anthropic's stream events.
var anthropicEvents = map[string]bool{
	"message_start": true, "content_block_start": true, "content_block_delta": true,
	"content_block_stop": true, "message_delta": true, "message_stop": true, "ping": true,
}
