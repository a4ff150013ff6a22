// Package cards builds confirmation cards: the sentence and the rows a
// person reads before a destructive or external action runs.
//
// A card is built on the server from the policy's reason and the record the
// call names, never from the model's words or arguments. Before the call
// runs, the card is built again from the record as it reads then and the
// two fingerprints are compared: a changed record runs nothing.
package cards

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/plaintext"
	"github.com/toolgate/toolgate/policies"
)

// MaxRows caps a card's rows: a card is read at a glance. The caps on its
// sentence, labels and values are plaintext's.
const MaxRows = 20

// Row is one label and value on a card, both plain text. Cut says the
// value was shortened to plaintext.MaxValue characters (it ends with an ellipsis):
// the page tells the person so.
type Row struct {
	Label string `json:"label"`
	Value string `json:"value"`
	Cut   bool   `json:"cut,omitempty"`
}

// Card is what the person confirms or declines.
type Card struct {
	Sentence string `json:"sentence"`
	Rows     []Row  `json:"rows"`

	// full holds each row's value cleaned but not cut, as Build read it:
	// the fingerprint covers it, so a change past the cut is a change.
	// A card read back from JSON has none; only a built card is
	// fingerprinted.
	full []string
}

// ErrRecord is returned when the record is not a JSON object.
var ErrRecord = errors.New("record is not a JSON object")

// ErrArguments is returned when a card shows arguments that are not a JSON
// object.
var ErrArguments = errors.New("arguments are not a JSON object")

// Build makes the card of an action from its record (the JSON body the
// record GET returned; nil when the card names no record) or, for a card
// without record, from args, the call's arguments as validated against the
// action's schema (rows args.<field>: the seed's summary of the validated
// input). Values are read with the row's gjson path, or the argument by its
// name: strings as they are, other scalars as their JSON text, missing
// values as an empty string, objects and arrays as their compact JSON.
// Everything is cleaned with Clean, shortened to plaintext.MaxValue with Cut set;
// the fingerprint covers each value in full.
func Build(card *policies.Card, record, args []byte) (Card, error) {
	c := Card{Sentence: plaintext.Clean(card.Reason, plaintext.MaxSentence)}
	source := record
	switch {
	case card.Record != nil:
		if !gjson.ValidBytes(record) || !gjson.ParseBytes(record).IsObject() {
			return Card{}, ErrRecord
		}
	case len(card.Rows) == 0:
		return c, nil
	default:
		if !gjson.ValidBytes(args) || !gjson.ParseBytes(args).IsObject() {
			return Card{}, ErrArguments
		}
		source = args
	}
	rows := card.Rows
	if len(rows) > MaxRows {
		rows = rows[:MaxRows]
	}
	c.Rows = make([]Row, 0, len(rows))
	c.full = make([]string, 0, len(rows))
	for _, r := range rows {
		// The policy loader refuses a card that mixes the two sources.
		path := r.Path
		switch {
		case r.Arg != "" && card.Record != nil:
			return Card{}, ErrArguments
		case r.Arg == "" && card.Record == nil:
			return Card{}, ErrRecord
		case r.Arg != "":
			path = gjson.Escape(r.Arg)
		}
		v := gjson.GetBytes(source, path)
		var s string
		switch v.Type {
		case gjson.String:
			s = v.Str
		case gjson.Null:
			s = ""
		default:
			s = v.Raw
		}
		full := plaintext.Clean(s, len(s))
		shown := plaintext.Clean(full, plaintext.MaxValue)
		c.Rows = append(c.Rows, Row{Label: plaintext.Clean(r.Label, plaintext.MaxLabel), Value: shown, Cut: shown != full})
		c.full = append(c.full, full)
	}
	return c, nil
}

// printed is the fingerprinted form of a card. Its JSON is the card's
// JSON as it was before rows were cut-marked, so a card whose values all
// fit keeps the fingerprint that holds already stored carry.
type printed struct {
	Sentence string       `json:"sentence"`
	Rows     []printedRow `json:"rows"`
}

type printedRow struct {
	Label string `json:"label"`
	Value string `json:"value"`
}

// Fingerprint identifies what the card says, with each value in full:
// two cards with the same sentence, labels and values (in order) have the
// same fingerprint, and a value that differs only past the cut differs.
func (c Card) Fingerprint() string {
	p := printed{Sentence: c.Sentence, Rows: make([]printedRow, len(c.Rows))}
	for i, r := range c.Rows {
		p.Rows[i] = printedRow{Label: r.Label, Value: r.Value}
		if len(c.full) == len(c.Rows) {
			p.Rows[i].Value = c.full[i]
		}
	}
	b, _ := json.Marshal(p) // a struct of strings cannot fail to encode
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
