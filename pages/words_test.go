package pages

import (
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var verbRe = regexp.MustCompile(`%[a-z]`)

// TestWordsAreComplete: every language gives every word, with the format
// verbs of the English one in the same order; statuses and messages are
// sentences (a capital, a full stop), headings and buttons are not.
func TestWordsAreComplete(t *testing.T) {
	en := reflect.ValueOf(english)
	typ := en.Type()
	headings := []string{"WaitingCard", "WaitingForm", "WaitingApprover", "WaitingList", "YourAnswers", "AlreadyAnswered", "Confirm", "Decline", "Submit", "NotNow",
		"NotAccepted", "NotFound", "SignInTitle", "ShowQuestion", "QuestionOf", "Shortened", "Required", "Choose",
		"NoteLabel", "WaitedFor", "ExpiresIn", "OlderPage", "NewestPage", "Minutes", "Hours"}
	for i, w := range spokenWords {
		v := reflect.ValueOf(*w)
		for f := 0; f < typ.NumField(); f++ {
			name := typ.Field(f).Name
			got, want := v.Field(f).String(), en.Field(f).String()
			if strings.TrimSpace(got) == "" {
				t.Errorf("%s: %s is empty", spokenTags[i], name)
				continue
			}
			if !slices.Equal(verbRe.FindAllString(got, -1), verbRe.FindAllString(want, -1)) {
				t.Errorf("%s: %s = %q: format verbs differ from %q", spokenTags[i], name, got, want)
			}
			if strings.HasPrefix(name, "Assistant") {
				if !strings.HasSuffix(got, ":") {
					t.Errorf("%s: %s = %q should end with a colon", spokenTags[i], name, got)
				}
				continue
			}
			if slices.Contains(headings, name) {
				if strings.HasSuffix(got, ".") {
					t.Errorf("%s: %s = %q is a heading or a button: no full stop", spokenTags[i], name, got)
				}
				continue
			}
			first := []rune(got)[0]
			if !strings.HasSuffix(got, ".") || strings.ToUpper(string(first)) != string(first) {
				t.Errorf("%s: %s = %q is not a sentence (a capital, a full stop)", spokenTags[i], name, got)
			}
		}
	}
}

func TestSpeak(t *testing.T) {
	for accept, want := range map[string]string{
		"":                                "en",
		"de":                              "de",
		"de-CH, de;q=0.9, en;q=0.8":       "de",
		"fr-CA":                           "fr",
		"es-419,es;q=0.9":                 "es",
		"pt-BR,pt;q=0.9":                  "en",
		"ja, fr;q=0.5":                    "fr",
		"en-GB,en;q=0.9,de;q=0.8":         "en",
		"*":                               "en",
		"not a header ,,, ;q=x":           "en",
		"nl;q=0.9, es;q=0.8, de;q=0.7":    "es",
		"de;q=0.1, fr;q=0.9":              "fr",
		"sv, nb;q=0.9, da;q=0.8, de;q=.7": "de",
	} {
		if got := speak(accept).Tag; got != want {
			t.Errorf("speak(%q) = %s, want %s", accept, got, want)
		}
	}
}

func TestRuleWords(t *testing.T) {
	en, de := speak("en"), speak("de")
	for rule, want := range map[string][2]string{
		"required":                   {"Fill in this field.", "Bitte füllen Sie dieses Feld aus."},
		"at most 120 characters":     {"Use at most 120 characters.", "Verwenden Sie höchstens 120 Zeichen."},
		"at least 1 characters":      {"Use at least 1 characters.", "Verwenden Sie mindestens 1 Zeichen."},
		"at most 2 items":            {"Choose at most 2.", "Wählen Sie höchstens 2."},
		"minimum 1.5":                {"Enter 1.5 or more.", "Geben Sie 1.5 oder mehr ein."},
		"maximum -3":                 {"Enter -3 or less.", "Geben Sie -3 oder weniger ein."},
		"must be greater than 0":     {"Enter more than 0.", "Geben Sie mehr als 0 ein."},
		"must be integer":            {"Enter a whole number.", "Geben Sie eine ganze Zahl ein."},
		"must be one of the choices": {"Choose one of the options.", "Wählen Sie eine der Optionen."},
		"must be a valid date-time":  {"Enter a valid date and time, like 2026-12-01T09:00:00Z.", "Geben Sie ein gültiges Datum mit Uhrzeit ein, z. B. 2026-12-01T09:00:00Z."},
		"must be a valid email":      {"Enter a valid email address.", "Geben Sie eine gültige E-Mail-Adresse ein."},
	} {
		if got := en.rule(rule); got.Text != want[0] || got.Lang != "" {
			t.Errorf("en %q = %+v, want %q", rule, got, want[0])
		}
		if got := de.rule(rule); got.Text != want[1] || got.Lang != "" {
			t.Errorf("de %q = %+v, want %q", rule, got, want[1])
		}
	}
	// A rule the pages do not know is shown as the gate wrote it, marked
	// English on a page in another language.
	if got := de.rule("must match the pattern ^[a-z]+$"); got.Text != "Must match the pattern ^[a-z]+$." || got.Lang != "en" {
		t.Errorf("unknown rule on a German page: %+v", got)
	}
	if got := en.rule("the form cannot be built now"); got.Text != "The form cannot be built now." || got.Lang != "" {
		t.Errorf("unknown rule on an English page: %+v", got)
	}
}

// FuzzRule: any rule text is said as a sentence, and a rule the pages do
// not know is shown as written (in English), never dropped.
func FuzzRule(f *testing.F) {
	for _, s := range []string{"required", "at most 120 characters", "minimum -1.5e3", "must be a valid date-time", "must match the pattern ^a$", ""} {
		f.Add(s, "de")
	}
	f.Fuzz(func(t *testing.T, rule, accept string) {
		got := speak(accept).rule(rule)
		if strings.TrimSpace(rule) != "" && (got.Text == "" || !strings.HasSuffix(got.Text, ".")) {
			t.Errorf("rule %q said as %q", rule, got.Text)
		}
		if got.Lang != "" && got.Text != sentence(rule) {
			t.Errorf("an unknown rule %q is not shown as written: %q", rule, got.Text)
		}
	})
}
