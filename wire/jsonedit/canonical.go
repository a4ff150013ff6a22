package jsonedit

import (
	"bytes"
	"encoding/json"
	"errors"
)

// Canonical re-encodes a JSON value with object keys sorted and no
// space, so two encodings of the same arguments digest alike.
func Canonical(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data after JSON value")
	}
	return json.Marshal(v) // maps marshal with sorted keys
}
