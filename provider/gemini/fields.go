package gemini

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
)

// Readers disagree on key spelling. Google writes camelCase; proto-JSON
// readers (the API itself, python google-genai's pydantic models) also
// take snake_case ("function_call"), and go-genai, which decodes through
// encoding/json, matches keys without case ("FunctionCall",
// "FUNCTIONCALL"). The gate reads a key as any reader would: folded to
// lower case with '_' dropped. Two members that fold alike in one object
// are read differently by different readers (encoding/json takes the
// last, gjson and others the first), so they are an error.

// fold returns a key as the gate compares it: lower case, '_' dropped.
func fold(k string) string {
	if !strings.ContainsAny(k, "_ABCDEFGHIJKLMNOPQRSTUVWXYZ") {
		return k
	}
	return strings.ReplaceAll(strings.ToLower(k), "_", "")
}

// member returns the member of obj whose key folds to key (lower case,
// no '_'), and where its key is spelled as written. More than one such
// member is an error.
func member(obj gjson.Result, key string) (v gjson.Result, spelled string, err error) {
	if !obj.IsObject() {
		return gjson.Result{}, "", nil
	}
	n := 0
	obj.ForEach(func(k, val gjson.Result) bool {
		if fold(k.Str) == key {
			n++
			v, spelled = val, k.Str
		}
		return true
	})
	if n > 1 {
		return gjson.Result{}, "", fmt.Errorf("the key %q is given %d times (in any spelling)", key, n)
	}
	return v, spelled, nil
}

// callKeys are the folded keys whose bytes may carry a call in a response.
// mayHoldCall searches for them without case; a key written with a JSON
// escape (\u0063) is found by the escape itself.
var callKeys = [][]byte{[]byte("functioncall"), []byte("function_call")}

// MayHoldCall reports whether a response body (or one chunk) may hold a
// functionCall part, in any spelling a reader takes: a byte search without
// JSON work. False means no reader finds a call in it.
func MayHoldCall(b []byte) bool {
	if bytes.Contains(b, []byte(`\u`)) || bytes.Contains(b, []byte(`\U`)) {
		return true
	}
	for _, k := range callKeys {
		if containsFoldBytes(b, k) {
			return true
		}
	}
	return false
}

// containsFoldBytes reports whether b holds lower (ASCII lower case,
// starting with a letter) in any case. The first byte is found with
// IndexByte in both cases, each position kept until passed, so the search
// stays linear and runs at memchr speed.
func containsFoldBytes(b, lower []byte) bool {
	lo, up := lower[0], lower[0]-('a'-'A')
	nl, nu := -2, -2 // next position of each case of the first byte; -2: not searched yet
	for at := 0; at+len(lower) <= len(b); {
		if nl != -1 && nl < at {
			if nl = bytes.IndexByte(b[at:], lo); nl >= 0 {
				nl += at
			}
		}
		if nu != -1 && nu < at {
			if nu = bytes.IndexByte(b[at:], up); nu >= 0 {
				nu += at
			}
		}
		i := nl
		if i < 0 || nu >= 0 && nu < i {
			i = nu
		}
		if i < 0 || i+len(lower) > len(b) {
			return false
		}
		if bytes.EqualFold(b[i:i+len(lower)], lower) {
			return true
		}
		at = i + 1
	}
	return false
}
