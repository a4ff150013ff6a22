package policies

import (
	"net/http"
	"strings"

	"go.yaml.in/yaml/v3"
)

// fieldSet is the top-level properties of an action's schema: the only
// names its URL templates may use. A nil *fieldSet means the action has no
// schema, and names are checked only when the call is expanded.
type fieldSet struct {
	props map[string]any
}

// card reads an action's card key.
func (l *loader) card(n *yaml.Node, fields *fieldSet) (*Card, error) {
	f, err := l.fields(n, "card", cardKeys...)
	if err != nil {
		return nil, err
	}
	c := &Card{}
	if c.Reason, c.Reasons, err = l.localized(f["reason"], "card.reason"); err != nil {
		return nil, err
	}
	if strings.TrimSpace(c.Reason) == "" {
		return nil, l.errf(n, "card.reason", "required: the sentence the person answers")
	}
	if rn := f["record"]; !isNull(rn) {
		if c.Record, err = l.record(rn, fields); err != nil {
			return nil, err
		}
	}
	if rn := f["rows"]; !isNull(rn) {
		if c.Rows, err = l.rows(rn, c.Record != nil, fields); err != nil {
			return nil, err
		}
	}
	if c.Editable, err = l.strList(f["editable"], "card.editable"); err != nil {
		return nil, err
	}
	return c, nil
}

// argsPrefix begins a row path that names a validated argument rather than
// a value of the record.
const argsPrefix = "args."

// argsRow reads a row path args.<field>: the field, and whether the path
// is one. The field is a top-level argument, named as URL templates name
// them.
func argsRow(path string) (field string, ok bool) {
	field, ok = strings.CutPrefix(path, argsPrefix)
	return field, ok
}

// record reads card.record: a URL template, or a mapping of url and method
// where the method, if given, must be GET. Reading a record must never change
// it, since it is read once to build the card and again before the run.
func (l *loader) record(n *yaml.Node, fields *fieldSet) (*Template, error) {
	if n.Kind != yaml.MappingNode {
		return l.template(n, "card.record", fields)
	}
	f, err := l.fields(n, "card.record", recordMappingKeys...)
	if err != nil {
		return nil, err
	}
	method, err := l.str(f["method"], "card.record.method")
	if err != nil {
		return nil, err
	}
	if method != "" && !strings.EqualFold(method, http.MethodGet) {
		return nil, l.errf(f["method"], "card.record", "the record is read with GET only")
	}
	if isNull(f["url"]) {
		return nil, l.errf(n, "card.record.url", "required")
	}
	return l.template(f["url"], "card.record", fields)
}

// rows reads card.rows in file order: a person reads the rows top to bottom
// as the operator wrote them. A row is label: path, or label: {path: ...,
// label: ...} where the label is given per language ({en: Post, de:
// Beitrag}); the en text is then the row's label, the key only names it.
//
// A card reads its rows from one source: the record when it has one, else
// the validated arguments (args.<field>, plain text like the seed's summary
// of the validated input). A card with a record may not show arguments
// (what the person confirms is the record as it reads; a record that holds
// an args object is read with the path args|field), and one without may
// show only arguments, each a property of the action's schema.
func (l *loader) rows(n *yaml.Node, record bool, fields *fieldSet) ([]Row, error) {
	pairs, err := l.pairs(n, "card.rows")
	if err != nil {
		return nil, err
	}
	rows := make([]Row, 0, len(pairs))
	for _, kv := range pairs {
		label := kv.key.Value
		if strings.TrimSpace(label) == "" {
			return nil, l.errf(kv.key, "card.rows", "a row needs a label")
		}
		key := "card.rows." + label
		row := Row{Label: label}
		pathNode := kv.value
		if kv.value.Kind == yaml.MappingNode {
			f, err := l.fields(kv.value, key, rowMappingKeys...)
			if err != nil {
				return nil, err
			}
			pathNode = f["path"]
			text, texts, err := l.localized(f["label"], key+".label")
			if err != nil {
				return nil, err
			}
			if strings.TrimSpace(text) != "" {
				row.Label, row.Labels = text, texts
			}
		}
		path, err := l.str(pathNode, key)
		if err != nil {
			return nil, err
		}
		if strings.TrimSpace(path) == "" {
			return nil, l.errf(kv.value, key, "needs the gjson path of its value in the record")
		}
		row.Path = path
		if field, ok := argsRow(path); ok {
			switch {
			case record:
				return nil, l.errf(kv.value, key, "a card with card.record shows the record's values only; args.%s names an argument (a record's own args object is read with the path args|%s)", field, field)
			case fields == nil:
				return nil, l.errf(kv.value, key, "an args row needs the action's schema: it shows a validated argument")
			case checkFieldName(field) != nil:
				return nil, l.errf(kv.value, key, "args. names one top-level argument: letters, digits, _ and -")
			}
			if _, known := fields.props[field]; !known {
				return nil, l.errf(kv.value, key, "names unknown field %q", field)
			}
			row.Arg = field
		} else if !record {
			return nil, l.errf(kv.value, key, "a row needs card.record, or a path args.<field> naming a validated argument")
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// template reads a URL template and, when the action has a schema, checks
// that every name it uses is a property the arguments can hold in a URL.
func (l *loader) template(n *yaml.Node, key string, fields *fieldSet) (*Template, error) {
	s, err := l.str(n, key)
	if err != nil {
		return nil, err
	}
	t, err := ParseTemplate(s)
	if err != nil {
		return nil, l.errf(n, key, "%w", err)
	}
	if fields == nil {
		return t, nil
	}
	for _, name := range t.fields {
		prop, ok := fields.props[name]
		if !ok {
			return nil, l.errf(n, key, "names unknown field %q", name)
		}
		obj, _ := prop.(map[string]any)
		if typ, _ := obj["type"].(string); typ == "object" || typ == "array" {
			return nil, l.errf(n, key, "field %q is an %s; a URL takes only strings, numbers and booleans", name, typ)
		}
	}
	return t, nil
}
