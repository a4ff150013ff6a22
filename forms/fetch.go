package forms

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/toolgate/toolgate/policies"
)

// ChoicesFromJSON reads the body of an ask.choices_from endpoint: a JSON
// list of {"value": ..., "label": ...}, in the order to show. A value is a
// string or a number (json.Number); a missing or empty label reads as the
// value. A value given twice keeps its first label. More than MaxChoices
// choices, or anything else, is an error, and the gate refuses the call
// rather than show a form without them. Labels are cleaned by Build.
func ChoicesFromJSON(body []byte) ([]policies.Choice, error) {
	var items []struct {
		Value any `json:"value"`
		Label any `json:"label"`
	}
	if err := decodeOne(body, &items); err != nil || items == nil {
		return nil, errors.New("choices: want a JSON list of {\"value\", \"label\"}")
	}
	if len(items) > MaxChoices {
		return nil, fmt.Errorf("choices: more than %d", MaxChoices)
	}
	out := make([]policies.Choice, 0, len(items))
	for i, it := range items {
		switch it.Value.(type) {
		case string, json.Number:
		default:
			return nil, fmt.Errorf("choices: item %d: the value must be a string or a number", i)
		}
		label, ok := it.Label.(string)
		if !ok && it.Label != nil {
			return nil, fmt.Errorf("choices: item %d: the label must be a string", i)
		}
		dup := false
		for _, c := range out {
			if policies.SameValue(c.Value, it.Value) {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, policies.Choice{Value: it.Value, Label: label})
		}
	}
	return out, nil
}

// DefaultFromJSON reads the body of an ask.default_from endpoint:
// {"value": ...}, a string, number (json.Number), boolean, or list of
// strings and numbers. A null or missing value means no default (nil, nil).
// Build opens a field on it only when the field would take it.
func DefaultFromJSON(body []byte) (any, error) {
	var obj map[string]any
	if err := decodeOne(body, &obj); err != nil || obj == nil {
		return nil, errors.New("default: want a JSON object {\"value\": ...}")
	}
	v := obj["value"]
	switch x := v.(type) {
	case nil, string, json.Number, bool:
		return v, nil
	case []any:
		for _, e := range x {
			switch e.(type) {
			case string, json.Number:
			default:
				return nil, errors.New("default: a list may hold only strings and numbers")
			}
		}
		return v, nil
	}
	return nil, errors.New("default: the value must be a string, number, boolean or list")
}

// decodeOne decodes exactly one JSON value from body, numbers as
// json.Number.
func decodeOne(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("more than one JSON value")
	}
	return nil
}
