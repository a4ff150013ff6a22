package interceptor

import "bytes"

// hasKey reports whether b contains key, a quoted JSON key such as
// `"tool_calls"`. It is bytes.Contains, made fast for JSON: bytes.Index
// scans for the needle's first byte, and a quote is the most common byte
// in JSON, so each event would cost dozens of false starts. hasKey scans
// for the key's rarest byte instead (rare is given by the caller: an
// index into key) and checks the whole key around each hit.
func hasKey(b, key []byte, rare int) bool {
	c := key[rare]
	for i := rare; i < len(b); {
		j := bytes.IndexByte(b[i:], c)
		if j < 0 {
			return false
		}
		i += j
		if start := i - rare; start+len(key) <= len(b) && bytes.Equal(b[start:start+len(key)], key) {
			return true
		}
		i++
	}
	return false
}

// toolCallsRare indexes the '_' of "tool_calls": in a chat chunk it
// appears elsewhere only in a few keys (finish_reason,
// system_fingerprint), where a quote appears forty times.
var toolCallsRare = bytes.IndexByte(toolCallsKey, '_')

// hasToolCalls is bytes.Contains(b, toolCallsKey), faster on JSON.
func hasToolCalls(b []byte) bool { return hasKey(b, toolCallsKey, toolCallsRare) }
