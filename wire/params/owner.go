package params

import (
	"strings"

	"github.com/tidwall/gjson"
)

// Owner returns the end user a request body names in the first of the
// owner fields (dotted paths, such as "metadata.user_id") that gives one,
// its spaces trimmed; "" when none does, or when a field read before one
// gives it is ambiguous (see BodyField): nobody, rather than a guess.
func Owner(body []byte, fields []string) string {
	for _, f := range fields {
		v, ok := BodyField(body, f)
		if !ok {
			return ""
		}
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return ""
}

// BodyField reads the string at a dotted path of a JSON body ("" when
// absent or not a string). ok is false when a key on the way is given
// twice, or also in another case: servers differ on which they read.
func BodyField(body []byte, path string) (string, bool) {
	v := gjson.ParseBytes(body)
	for _, key := range strings.Split(path, ".") {
		if !v.IsObject() {
			return "", true
		}
		var found gjson.Result
		n := 0
		v.ForEach(func(k, val gjson.Result) bool {
			if strings.EqualFold(k.String(), key) {
				n++
				if k.String() == key {
					found = val
				}
			}
			return n < 2
		})
		if n > 1 {
			return "", false
		}
		v = found
	}
	if v.Type != gjson.String {
		return "", true
	}
	return v.Str, true
}
