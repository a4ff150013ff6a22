package policies

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	"golang.org/x/text/language"
)

// Texts is a sentence the policy gives in several languages: BCP 47 tag (as
// written in the file) → text. It always holds an en entry, the default.
// Nil when the file gives a plain string.
type Texts map[string]string

// In returns the text for a person whose language preferences are prefs
// (language.ParseAcceptLanguage of their Accept-Language), matched with
// golang.org/x/text/language, and the tag it is written in. With no
// preference, or none the texts can serve, it returns the en text. On nil
// Texts it returns "", "".
func (t Texts) In(prefs []language.Tag) (text, tag string) {
	if len(t) == 0 {
		return "", ""
	}
	// The default comes first: the matcher falls back to its first tag.
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		switch {
		case isEnglish(a) && !isEnglish(b):
			return -1
		case isEnglish(b) && !isEnglish(a):
			return 1
		}
		return strings.Compare(a, b)
	})
	tags := make([]language.Tag, len(keys))
	for i, k := range keys {
		tags[i] = language.Make(k) // checked at load
	}
	_, i, _ := language.NewMatcher(tags).Match(prefs...)
	return t[keys[i]], keys[i]
}

// isEnglish reports whether a texts key is the plain en tag, the default.
func isEnglish(key string) bool {
	t, err := language.Parse(key)
	return err == nil && t == language.English
}

// localized reads a text that is either a plain string or a mapping of
// languages to strings ({en: Delete this post?, de: Diesen Beitrag
// löschen?}). It returns the default text (the string, or the en entry)
// and, for a mapping, every entry. An absent value is "".
func (l *loader) localized(n *yaml.Node, key string) (string, Texts, error) {
	if isNull(n) {
		return "", nil, nil
	}
	n = deref(n)
	switch n.Kind {
	case yaml.ScalarNode:
		return n.Value, nil, nil
	case yaml.MappingNode:
	default:
		return "", nil, l.errf(n, key, "must be a string, or one per language: {en: ..., de: ...}")
	}
	pairs, err := l.pairs(n, key)
	if err != nil {
		return "", nil, err
	}
	texts := make(Texts, len(pairs))
	def := ""
	for _, kv := range pairs {
		k := key + "." + kv.key.Value
		tag, err := language.Parse(kv.key.Value)
		if err != nil {
			return "", nil, l.errf(kv.key, key, "%q is not a BCP 47 language tag", kv.key.Value)
		}
		s, err := l.str(kv.value, k)
		if err != nil {
			return "", nil, err
		}
		if strings.TrimSpace(s) == "" {
			return "", nil, l.errf(kv.value, k, "may not be empty")
		}
		if tag == language.English {
			if def != "" {
				return "", nil, l.errf(kv.key, k, "English is given twice")
			}
			def = s
		}
		texts[kv.key.Value] = s
	}
	if def == "" {
		return "", nil, l.errf(n, key, "needs an en entry: the text the model and the app read, and any person whose language is not listed")
	}
	return def, texts, nil
}
