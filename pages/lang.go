package pages

import (
	"golang.org/x/text/language"
)

// The languages the pages' own words are written in, English first: the
// matcher falls back to it.
var (
	spoken      = []language.Tag{language.English, language.German, language.French, language.Spanish}
	spokenWords = []*words{&english, &german, &french, &spanish}
	spokenTags  = []string{"en", "de", "fr", "es"}
	matcher     = language.NewMatcher(spoken)
)

// speech is the language a page is written in.
type speech struct {
	Tag string // BCP 47, for the html lang attribute
	W   *words
}

// speak picks the pages' language from an Accept-Language value with
// golang.org/x/text/language matching (de-CH reads German, pt reads
// English); English when the person prefers none of the four.
func speak(acceptLanguage string) speech {
	prefs, _, _ := language.ParseAcceptLanguage(acceptLanguage)
	_, i, _ := matcher.Match(prefs...)
	return speech{Tag: spokenTags[i], W: spokenWords[i]}
}

// otherLang is tag when text in it is not in the page's language, else "":
// a screen reader switches voice for an element with its own lang.
func (s speech) otherLang(tag string) string {
	if tag == "" {
		return ""
	}
	t, err := language.Parse(tag)
	if err != nil {
		return ""
	}
	if base, _ := t.Base(); base.String() == s.Tag {
		return ""
	}
	return tag
}
