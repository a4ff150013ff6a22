package keyscan

import "bytes"

// Contains reports whether b holds needle, as bytes.Contains does, found
// by needle's letter rarest in English text: IndexByte for that byte,
// then a comparison. bytes.Contains steps by a needle's first byte, and
// the needles the gate looks for in every request begin with a quote
// (`"previous_response_id"`) or an 'h' (a link's prefix), the commonest
// bytes of a JSON body: on a 2 KB request it took ~550 ns where this
// takes ~25. A needle without a letter goes to bytes.Contains.
func Contains(b, needle []byte) bool {
	k, best := -1, uint8(0)
	for i, c := range needle {
		if r := rarity[c]; r > best {
			k, best = i, r
		}
	}
	if k < 0 {
		return bytes.Contains(b, needle)
	}
	c := needle[k]
	for at := k; len(b)-at >= len(needle)-k; {
		j := bytes.IndexByte(b[at:], c)
		if j < 0 {
			return false
		}
		i := at + j - k // where needle would begin
		if i+len(needle) > len(b) {
			return false
		}
		if bytes.Equal(b[i:i+len(needle)], needle) {
			return true
		}
		at += j + 1
	}
	return false
}

// rarity ranks the letters, in either case, from the commonest in English
// text (1) to the rarest (26); every other byte is 0.
var rarity = func() (t [256]uint8) {
	for i, c := range []byte("etaoinshrdlcumwfgypbvkjxqz") {
		t[c] = uint8(i + 1)
		t[c-'a'+'A'] = uint8(i + 1)
	}
	return t
}()
