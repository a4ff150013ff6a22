package policies

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// loader walks the YAML node tree of one policy file. Nodes rather than
// struct decoding let every error name the action and key path, keep the
// order of card rows, and refuse keys given twice.
type loader struct {
	file   string
	action string // the action being read; "" at the top of the file
}

// errf returns a policy error at node n (which may be nil) and key path key.
func (l *loader) errf(n *yaml.Node, key, format string, args ...any) error {
	e := &Error{File: l.file, Action: l.action, Key: key, Err: fmt.Errorf(format, args...)}
	if n != nil {
		e.Line = n.Line
	}
	return e
}

// parse is Parse without the digest.
func parse(file string, data []byte) (*Policy, error) {
	l := &loader{file: file}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, l.errf(nil, "", "the file is empty")
		}
		return nil, &Error{File: file, Err: err}
	}
	var more yaml.Node
	switch err := dec.Decode(&more); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, &Error{File: file, Err: err}
	default:
		return nil, l.errf(&more, "", "the file holds more than one YAML document (---)")
	}
	if len(doc.Content) == 0 || isNull(doc.Content[0]) {
		return nil, l.errf(&doc, "", "the file is empty")
	}
	root := deref(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		return nil, l.errf(root, "", "the file must be a mapping with app and actions")
	}
	top, err := l.fields(root, "", fileKeys...)
	if err != nil {
		return nil, err
	}
	p := &Policy{File: file}
	if p.App, err = l.str(top["app"], "app"); err != nil {
		return nil, err
	}
	if p.Mode, err = l.mode(top["mode"], "mode", Enforce); err != nil {
		return nil, err
	}
	if p.Notify, err = l.notify(top["notify"], nil, false); err != nil {
		return nil, err
	}
	if p.DeclineNote, err = l.boolean(top["decline_note"], "decline_note"); err != nil {
		return nil, err
	}
	forbidden, err := l.strList(top["forbidden_keys"], "forbidden_keys")
	if err != nil {
		return nil, err
	}
	acts := top["actions"]
	if isNull(acts) || acts.Kind == yaml.MappingNode && len(acts.Content) == 0 {
		return nil, l.errf(root, "actions", "the file declares no actions")
	}
	pairs, err := l.pairs(acts, "actions")
	if err != nil {
		return nil, err
	}
	p.Actions = make(map[string]*Action, len(pairs))
	for _, kv := range pairs {
		al := &loader{file: file, action: kv.key.Value}
		a, err := al.readAction(kv.key, kv.value, forbidden, p)
		if err != nil {
			return nil, err
		}
		p.Actions[a.Name] = a
		p.shadow = p.shadow || a.Shadow()
		p.offer = p.offer || a.HasOfferWhen() && !a.Shadow()
	}
	return p, nil
}

// readAction reads one action; key is its tool name's node, n its mapping,
// forbidden the file's forbidden_keys, file the file's own keys (mode and
// notify, which an action takes unless it gives its own).
func (l *loader) readAction(key, n *yaml.Node, forbidden []string, file *Policy) (*Action, error) {
	if err := checkToolName(l.action); err != nil {
		return nil, l.errf(key, "", "%w", err)
	}
	f, err := l.fields(n, "", actionKeys...)
	if err != nil {
		return nil, err
	}
	a := &Action{Name: l.action, cache: &schemaCache{}}
	effect, err := l.str(f["effect"], "effect")
	if err != nil {
		return nil, err
	}
	switch a.Effect = Effect(effect); a.Effect {
	case Read, Write, Destructive, External:
	case "":
		return nil, l.errf(n, "effect", "required: read, write, destructive or external")
	default:
		return nil, l.errf(f["effect"], "effect", "unknown effect %q; want read, write, destructive or external", effect)
	}
	if _, err := l.str(f["description"], "description"); err != nil {
		return nil, err
	}
	var fields *fieldSet // the schema's properties, for template names
	if sn := f["schema"]; !isNull(sn) {
		if fields, err = l.schema(a, sn); err != nil {
			return nil, err
		}
	}
	if a.Run, err = l.run(f["run"], fields); err != nil {
		return nil, err
	}
	switch cn := f["card"]; {
	case !isNull(cn) && !a.Effect.NeedsCard():
		return nil, l.errf(cn, "card", "only destructive and external actions have a card")
	case !isNull(cn):
		if a.Card, err = l.card(cn, fields); err != nil {
			return nil, err
		}
	case a.Effect.NeedsCard():
		return nil, l.errf(n, "card", "required: %s actions wait for the person to confirm a card", a.Effect)
	}
	if a.Reply, a.Replies, err = l.localized(f["reply"], "reply"); err != nil {
		return nil, err
	}
	if a.MCP, err = l.mcp(a, f["mcp"]); err != nil {
		return nil, err
	}
	if a.TTL, err = l.ttl(f["ttl"]); err != nil {
		return nil, err
	}
	if err := l.operate(a, f, file); err != nil {
		return nil, err
	}
	if err := l.rules(a, f["rules"], f["offer_when"], fields); err != nil {
		return nil, err
	}
	nodes, err := l.askKeys(a, f, forbidden)
	if err != nil {
		return nil, err
	}
	if err := l.checkEditable(a, f["card"]); err != nil {
		return nil, err
	}
	if a.Schema != nil {
		// Mistakes that need the schema; without one the gate runs CheckAsk
		// on the schema the request's tools give.
		if err := l.checkAskAtLoad(a, nodes); err != nil {
			return nil, err
		}
		if len(a.RequiredForAgents) > 0 {
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(a.AgentSchema(a.Schema)))
			if err != nil {
				return nil, l.errf(f["required_for_agents"], "required_for_agents", "%w", err)
			}
			if a.agent, err = compileSchema(a.Name, doc); err != nil {
				return nil, l.errf(f["required_for_agents"], "required_for_agents", "the schema offered to agents does not compile: %w", err)
			}
		}
	}
	return a, nil
}

// checkToolName refuses names no model can call and that would be unreadable
// in logs.
func checkToolName(name string) error {
	if name == "" {
		return errors.New("a tool name may not be empty")
	}
	if !utf8.ValidString(name) || strings.IndexFunc(name, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r)
	}) >= 0 {
		return errors.New("a tool name may not hold spaces or control characters")
	}
	return nil
}

// schema reads an action's schema into a.Schema and compiles it, returning
// the properties template fields may name.
func (l *loader) schema(a *Action, n *yaml.Node) (*fieldSet, error) {
	raw, err := l.schemaJSON(n)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, l.errf(n, "schema", "%w", err)
	}
	props, err := schemaProperties(doc)
	if err != nil {
		return nil, l.errf(n, "schema", "%w", err)
	}
	if a.schema, err = compileSchema(a.Name, doc); err != nil {
		return nil, l.compileError(n, err)
	}
	a.Schema = raw
	return &fieldSet{props: props}, nil
}

// kv is one key and value of a YAML mapping.
type kv struct{ key, value *yaml.Node }

// pairs returns the entries of mapping n in file order, refusing non-string
// keys, merge keys and keys given twice. path is n's key path.
func (l *loader) pairs(n *yaml.Node, path string) ([]kv, error) {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		return nil, l.errf(n, path, "must be a mapping")
	}
	out := make([]kv, 0, len(n.Content)/2)
	lines := make(map[string]int, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := deref(n.Content[i])
		if k.Kind != yaml.ScalarNode {
			return nil, l.errf(k, path, "keys must be strings")
		}
		if k.ShortTag() == "!!merge" {
			return nil, l.errf(k, path, "merge keys (<<) are not supported")
		}
		if line, dup := lines[k.Value]; dup {
			return nil, l.errf(k, join(path, k.Value), "given twice (lines %d and %d)", line, k.Line)
		}
		lines[k.Value] = k.Line
		out = append(out, kv{k, deref(n.Content[i+1])})
	}
	return out, nil
}

// fields returns the values of mapping n by key, refusing keys not in known,
// so a misspelt key fails instead of being ignored.
func (l *loader) fields(n *yaml.Node, path string, known ...string) (map[string]*yaml.Node, error) {
	pairs, err := l.pairs(n, path)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*yaml.Node, len(pairs))
	for _, kv := range pairs {
		if !slices.Contains(known, kv.key.Value) {
			hint := ""
			if near := nearest(kv.key.Value, known); near != "" {
				hint = fmt.Sprintf(" (did you mean %s?)", near)
			}
			return nil, l.errf(kv.key, join(path, kv.key.Value), "unknown key%s; known keys are %s", hint, strings.Join(known, ", "))
		}
		out[kv.key.Value] = kv.value
	}
	return out, nil
}

// nearest returns the key of known a misspelt key most likely meant: the
// one fewest single-letter edits away (ignoring case), when that is at most
// a third of its length (at least one edit); "" when none is that close, so
// that a key from another place is named only by the list of known keys.
func nearest(key string, known []string) string {
	best, bestDist := "", max(1, len(key)/3)+1
	for _, k := range known {
		if d := editDistance(strings.ToLower(key), k); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// editDistance is the number of single-byte insertions, deletions,
// substitutions and swaps of neighbours that turn a into b (the optimal
// string alignment distance): "paht" is one edit from "path".
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// str reads a string value; an absent or null value is "". Other scalars
// (numbers, booleans) are taken as written.
func (l *loader) str(n *yaml.Node, key string) (string, error) {
	if isNull(n) {
		return "", nil
	}
	n = deref(n)
	if n.Kind != yaml.ScalarNode {
		return "", l.errf(n, key, "must be a string")
	}
	return n.Value, nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// deref follows an alias (*name) to the node it names.
func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// isNull reports whether n is absent or null (~, null or nothing).
func isNull(n *yaml.Node) bool {
	n = deref(n)
	return n == nil || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}
