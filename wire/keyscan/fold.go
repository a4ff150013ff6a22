package keyscan

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// IndexFold returns the place of the first instance of lower in b in any
// ASCII case, or -1; lower is ASCII with no upper-case letter. It answers
// as bytes.EqualFold at each place would: for an ASCII lower, EqualFold of
// two slices of one length folds ASCII letters only (a rune outside ASCII
// that folds onto a letter, ſ or K, is longer than the letter, so a slice
// of b holding one has fewer runes than lower).
//
// It reads b eight bytes at a time and looks at two of lower's letters in
// either case, its rarest in English text (Rarest) and the rarer letter
// next to it: only a place where both are goes on to the full comparison.
// ScanFold, which looks for the rarest letter alone, pays an IndexByte and
// a comparison at each instance of it, and the rarest letter of a short
// word is common in a request's prose ('l' of "tools": ~65 times in the 2
// KB Gemini request of BenchmarkIndexFold, where "ls" is not there). Two
// letters side by side make a rarer pair than two apart, which words'
// endings line up ("g" and "m" of "arguments" in each "spring meetup"). A
// lower without a letter goes to bytes.Index.
func IndexFold(b, lower []byte) int {
	p := Rarest(lower)
	if p < 0 {
		return bytes.Index(b, lower)
	}
	q := p // the other letter looked at: p itself when no letter is next to it
	for _, i := range []int{p - 1, p + 1} {
		if i >= 0 && i < len(lower) && rarity[lower[i]] > 0 && (q == p || rarity[lower[i]] > rarity[lower[q]]) {
			q = i
		}
	}
	at := 0
	if last := max(p, q); len(b) >= last+8 {
		// Lane k of a block at at is the place at+k, whose letters are
		// b[at+k+p] and b[at+k+q]: bp and bq are b seen from p and q, cut
		// to one length so that both hold every block's eight bytes.
		bp, bq := b[p:len(b)-last+p], b[q:len(b)-last+q]
		for {
			var m uint64
			if at, m = pairLanes(bp, bq, at, lanes*uint64(lower[p]), lanes*uint64(lower[q])); m == 0 {
				break
			}
			for ; m != 0; m &= m - 1 {
				if i := at + bits.TrailingZeros64(m)/8; i+len(lower) <= len(b) && equalFold(b[i:i+len(lower)], lower) {
					return i
				}
			}
			at += 8
		}
	}
	for ; at+len(lower) <= len(b); at++ {
		if equalFold(b[at:at+len(lower)], lower) {
			return at
		}
	}
	return -1
}

const lanes = 0x0101010101010101 // one in each byte of a uint64

// pairLanes returns the first block of eight places at or after at (a
// multiple of 8; bp and bq have one length) where bp's byte is the letter
// in each lane of wantP and bq's the letter of wantQ, in either case, with
// a mask that has the high bit set in those lanes: and the place past the
// last whole block, with 0, when there is none.
//
// A byte with 0x20 set is one of those letters exactly when it equals the
// letter with 0x20 set: c|0x20 folds a letter, and makes no other byte a
// lower-case letter. A lane is zero after the XOR where it matches; the
// zero test ((x - lanes) &^ x, high bits) marks each zero lane, and may
// mark a lane above a zero one (the borrow out of it), never one with no
// zero below it: every match is marked, and the few places more are
// turned away by the full comparison. Two blocks a turn, for the loop's
// cost.
func pairLanes(bp, bq []byte, at int, wantP, wantQ uint64) (int, uint64) {
	const fold, high = 0x2020202020202020, 0x8080808080808080
	bq = bq[:len(bp)]
	for ; at+16 <= len(bp); at += 16 {
		x0 := binary.LittleEndian.Uint64(bp[at:at+8]) | fold ^ wantP
		y0 := binary.LittleEndian.Uint64(bq[at:at+8]) | fold ^ wantQ
		x1 := binary.LittleEndian.Uint64(bp[at+8:at+16]) | fold ^ wantP
		y1 := binary.LittleEndian.Uint64(bq[at+8:at+16]) | fold ^ wantQ
		m0 := (x0 - lanes) &^ x0 & ((y0 - lanes) &^ y0) & high
		m1 := (x1 - lanes) &^ x1 & ((y1 - lanes) &^ y1) & high
		if m0 != 0 {
			return at, m0
		}
		if m1 != 0 {
			return at + 8, m1
		}
	}
	if at+8 <= len(bp) {
		x := binary.LittleEndian.Uint64(bp[at:at+8]) | fold ^ wantP
		y := binary.LittleEndian.Uint64(bq[at:at+8]) | fold ^ wantQ
		if m := (x - lanes) &^ x & ((y - lanes) &^ y) & high; m != 0 {
			return at, m
		}
		at += 8
	}
	return at, 0
}

// equalFold reports whether b is lower (ASCII, no upper-case letter) with
// any of its letters in either case.
func equalFold(b, lower []byte) bool {
	for i, c := range lower {
		x := b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if x != c {
			return false
		}
	}
	return true
}
