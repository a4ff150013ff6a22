package forms

import (
	"encoding/json"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// checkPolicy has one field of every kind.
const checkPolicy = `actions:
  a:
    effect: write
    ask_for_missing: true
    schema:
      type: object
      properties:
        title: {type: string, minLength: 2, maxLength: 5}
        body: {type: string}
        note: {type: string}
        email: {type: string, format: email}
        site: {type: string, format: uri}
        day: {type: string, format: date}
        at: {type: string, format: date-time}
        n: {type: integer, minimum: 1, maximum: 10}
        price: {type: number, minimum: 0}
        ok: {type: boolean}
        status: {type: string, enum: [draft, published]}
        size: {type: integer, enum: [1, 2, 3]}
        tags: {type: array, items: {type: string, enum: [a, b, c]}, maxItems: 2}
        due: {type: [string, "null"], format: date}
      required: [title, body, email, site, day, at, n, price, ok, status, size, tags, due]
    ask:
      textarea: [body]
      confirm: [note]
    run: {url: 'http://x/'}
`

func checkForm(t *testing.T) Form {
	t.Helper()
	return askEmpty(t, load(t, "a", checkPolicy))
}

// full is a complete valid answer.
func full() url.Values {
	return url.Values{
		"title": {"Hello"}, "body": {"Line one\r\nLine two"}, "email": {" ann@example.com "},
		"site": {"https://example.com/x"}, "day": {"2025-03-01"}, "at": {"2025-03-01T10:00:00+01:00"},
		"n": {"7"}, "price": {"+.5"}, "ok": {"on"}, "status": {"draft"}, "size": {"2"}, "tags": {"a", "c"},
		"due": {"2025-04-01"},
	}
}

func TestCheck(t *testing.T) {
	f := checkForm(t)
	values, errs := Check(f, full())
	if errs != nil {
		t.Fatalf("errs = %v", errs)
	}
	want := map[string]any{
		"title": "Hello", "body": "Line one\nLine two", "email": "ann@example.com",
		"site": "https://example.com/x", "day": "2025-03-01", "at": "2025-03-01T10:00:00+01:00",
		"n": json.Number("7"), "price": json.Number("0.5"), "ok": true, "status": "draft",
		"size": json.Number("2"), "tags": []any{"a", "c"}, "due": "2025-04-01",
	}
	if !reflect.DeepEqual(values, want) {
		t.Errorf("values:\n got %v\nwant %v", values, want)
	}

	tests := []struct {
		name   string
		edit   func(v url.Values)
		field  string
		value  any    // the field's value; nil: left out
		rules  string // the field's errors joined by "; "
		absent bool   // the field is neither in values nor errs
	}{
		{"extra keys are dropped", func(v url.Values) { v.Set("evil", "x"); v.Set("_csrf", "y") }, "evil", nil, "", true},
		{"empty optional field is left out", func(v url.Values) { v.Set("note", "") }, "note", nil, "", true},
		{"absent optional field is left out", func(v url.Values) { v.Del("note") }, "note", nil, "", true},
		{"blank optional field is left out", func(v url.Values) { v.Set("note", "  \t") }, "note", nil, "", true},
		{"empty nullable field is left out", func(v url.Values) { v.Set("due", "") }, "due", nil, "", true},
		{"optional text kept as typed", func(v url.Values) { v.Set("note", " hi ") }, "note", " hi ", "", false},
		{"empty required field", func(v url.Values) { v.Set("title", "") }, "title", nil, "required", false},
		{"absent required field", func(v url.Values) { v.Del("n") }, "n", nil, "required", false},
		{"unchecked checkbox is false", func(v url.Values) { v.Del("ok") }, "ok", false, "", false},
		{"hidden false then checked", func(v url.Values) { v["ok"] = []string{"false", "true"} }, "ok", true, "", false},
		{"checkbox nonsense", func(v url.Values) { v.Set("ok", "SECRET-VALUE") }, "ok", nil, "must be true or false", false},
		{"empty multi-select is []", func(v url.Values) { v.Del("tags") }, "tags", []any{}, "", false},
		{"hidden empty multi-select is []", func(v url.Values) { v["tags"] = []string{""} }, "tags", []any{}, "", false},
		{"multi-select picks each once", func(v url.Values) { v["tags"] = []string{"b", "b"} }, "tags", []any{"b"}, "", false},
		{"multi-select outside choices", func(v url.Values) { v["tags"] = []string{"a", "SECRET-VALUE"} }, "tags", nil, "must be one of the choices", false},
		{"multi-select too many", func(v url.Values) { v["tags"] = []string{"a", "b", "c"} }, "tags", nil, "at most 2 items", false},
		{"select outside choices", func(v url.Values) { v.Set("status", "SECRET-VALUE") }, "status", nil, "must be one of the choices", false},
		{"number select", func(v url.Values) { v.Set("size", "3.0") }, "size", json.Number("3"), "", false},
		{"number select outside", func(v url.Values) { v.Set("size", "4") }, "size", nil, "must be one of the choices", false},
		{"integer with spaces", func(v url.Values) { v.Set("n", " 10 ") }, "n", json.Number("10"), "", false},
		{"integer written as 7.0", func(v url.Values) { v.Set("n", "7.0") }, "n", json.Number("7"), "", false},
		{"integer with exponent", func(v url.Values) { v.Set("n", "1e1") }, "n", json.Number("10"), "", false},
		{"integer not whole", func(v url.Values) { v.Set("n", "7.5") }, "n", nil, "must be integer", false},
		{"integer not a number", func(v url.Values) { v.Set("n", "SECRET-VALUE") }, "n", nil, "must be integer", false},
		{"integer over maximum", func(v url.Values) { v.Set("n", "11") }, "n", nil, "maximum 10", false},
		{"integer under minimum", func(v url.Values) { v.Set("n", "0") }, "n", nil, "minimum 1", false},
		{"huge exponent", func(v url.Values) { v.Set("price", "1e999999999") }, "price", nil, "must be number", false},
		{"number leading zeros", func(v url.Values) { v.Set("price", "007.50") }, "price", json.Number("7.50"), "", false},
		{"negative number", func(v url.Values) { v.Set("price", "-1") }, "price", nil, "minimum 0", false},
		{"text too short", func(v url.Values) { v.Set("title", "S") }, "title", nil, "at least 2 characters", false},
		{"text too long", func(v url.Values) { v.Set("title", "SECRET-VALUE") }, "title", nil, "at most 5 characters", false},
		{"length counts characters", func(v url.Values) { v.Set("title", "Grüße") }, "title", "Grüße", "", false},
		{"two values for one field", func(v url.Values) { v["title"] = []string{"Hello", "World"} }, "title", nil, "must be one value", false},
		{"bad email", func(v url.Values) { v.Set("email", "SECRET-VALUE") }, "email", nil, "must be a valid email", false},
		{"relative uri", func(v url.Values) { v.Set("site", "/SECRET-VALUE") }, "site", nil, "must be a valid uri", false},
		{"bad date", func(v url.Values) { v.Set("day", "2025-02-30") }, "day", nil, "must be a valid date", false},
		{"date-time without offset", func(v url.Values) { v.Set("at", "2025-03-01T10:00") }, "at", nil, "must be a valid date-time", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			answer := full()
			tt.edit(answer)
			values, errs := Check(f, answer)
			for k := range values {
				if k == "evil" || k == "_csrf" {
					t.Errorf("values hold %q, which the form does not", k)
				}
			}
			got, inValues := values[tt.field]
			if tt.value != nil && !reflect.DeepEqual(got, tt.value) {
				t.Errorf("values[%q] = %#v; want %#v", tt.field, got, tt.value)
			}
			if tt.value == nil && inValues {
				t.Errorf("values[%q] = %#v; want it left out", tt.field, got)
			}
			if r := strings.Join(errs[tt.field], "; "); r != tt.rules {
				t.Errorf("errs[%q] = %q; want %q", tt.field, r, tt.rules)
			}
			if len(errs) > 1 || len(errs) == 1 && errs[tt.field] == nil {
				t.Errorf("errs for other fields: %v", errs)
			}
			for field, rules := range errs {
				for _, r := range rules {
					if strings.Contains(r, "SECRET-VALUE") {
						t.Errorf("error for %q echoes the value: %q", field, r)
					}
				}
			}
		})
	}
}

func TestCheckUnreadableForm(t *testing.T) {
	for _, f := range []Form{{}, {RequestedSchema: json.RawMessage(`{"type":"object","properties":{}}`)},
		{RequestedSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"object"}}}`)}} {
		values, errs := Check(f, url.Values{"x": {"1"}})
		if len(values) != 0 || len(errs[""]) != 1 {
			t.Errorf("Check(%s) = %v, %v; want the form refused", f.RequestedSchema, values, errs)
		}
		if _, errs := CheckJSON(f, []byte(`{}`)); len(errs[""]) != 1 {
			t.Errorf("CheckJSON(%s) errs = %v", f.RequestedSchema, errs)
		}
	}
}

func TestCheckJSON(t *testing.T) {
	f := checkForm(t)
	const base = `"title":"Hello","body":"a\r\nb","email":"ann@example.com","site":"https://example.com","day":"2025-03-01",` +
		`"at":"2025-03-01T10:00:00Z","n":7,"price":0.5,"ok":true,"status":"draft","size":2,"tags":["a"],"due":null`
	values, errs := CheckJSON(f, []byte(`{`+base+`,"evil":"x"}`))
	if errs != nil {
		t.Fatalf("errs = %v", errs)
	}
	if values["n"] != json.Number("7") || values["ok"] != true || values["body"] != "a\nb" || !reflect.DeepEqual(values["tags"], []any{"a"}) {
		t.Errorf("values = %v", values)
	}
	if _, ok := values["evil"]; ok {
		t.Error("extra key kept")
	}
	if _, ok := values["due"]; ok {
		t.Error("null field not left out")
	}
	tests := []struct{ name, field, value, rules string }{
		{"string for a number", "n", `"7"`, "must be integer"},
		{"number for a string", "title", `12345`, "must be string"},
		{"string for a checkbox", "ok", `"true"`, "must be true or false"},
		{"absent checkbox", "ok", ``, ""},
		{"string for a list", "tags", `"a"`, "must be a list"},
		{"number in a string list", "tags", `[1]`, "must be one of the choices"},
		{"string for a number choice", "size", `"2"`, "must be integer"},
		{"object", "title", `{"a":1}`, "must be string"},
		{"null required", "title", `null`, "required"},
		{"empty string required", "title", `""`, "required"},
		{"too long", "title", `"SECRET-VALUE"`, "at most 5 characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(`{`+base+`}`), &m); err != nil {
				t.Fatal(err)
			}
			if tt.value == "" {
				delete(m, tt.field)
			} else {
				m[tt.field] = json.RawMessage(tt.value)
			}
			b, _ := json.Marshal(m)
			values, errs := CheckJSON(f, b)
			if r := strings.Join(errs[tt.field], "; "); r != tt.rules {
				t.Errorf("errs[%q] = %q; want %q (values %v)", tt.field, r, tt.rules, values)
			}
			if len(errs) > 1 {
				t.Errorf("errs for other fields: %v", errs)
			}
		})
	}
	for _, bad := range []string{`[]`, `"x"`, `null`, `{`, ``} {
		if _, errs := CheckJSON(f, []byte(bad)); !reflect.DeepEqual(errs, map[string][]string{"": {"must be a JSON object"}}) {
			t.Errorf("CheckJSON(%q) errs = %v", bad, errs)
		}
	}
}

func TestMerge(t *testing.T) {
	a := load(t, "a", `actions:
  a:
    effect: write
    ask_for_missing: true
    schema:
      type: object
      properties:
        title: {type: string}
        note: {type: string}
        due: {type: [string, "null"]}
        tags: {type: array, items: {type: string, enum: [a, b]}}
        meta: {type: object}
      required: [title, due]
    ask: {confirm: [note, tags]}
    run: {url: 'http://x/'}
`)
	model := []byte(`{"meta": {"k": [1, 2]}, "note":"the model's <b>", "title": 5, "tags":["a"], "extra": "kept"}`)
	d := Plan(a, nil, model)
	if d.Outcome != Ask || !reflect.DeepEqual(d.Fields, []string{"title", "note", "due", "tags"}) {
		t.Fatalf("Plan = %+v", d)
	}
	f, err := Build(a, nil, d, "", Fetched{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.NullWhenEmpty, []string{"due"}) {
		t.Fatalf("NullWhenEmpty = %q", f.NullWhenEmpty)
	}
	values, errs := Check(f, url.Values{"title": {"Mine & yours"}, "note": {""}, "due": {""}, "evil": {"x"}})
	if errs != nil {
		t.Fatal(errs)
	}
	values["evil"] = "slipped in" // Merge ignores what the form does not hold
	got, err := Merge(f, model, values)
	if err != nil {
		t.Fatal(err)
	}
	// title is the person's; note was left empty, so the model's is gone;
	// due is required and nullable: null; tags answered []; meta and extra
	// are the model's, as written.
	want := `{"meta":{"k":[1,2]},"title":"Mine & yours","tags":[],"extra":"kept","due":null}`
	if string(got) != want {
		t.Errorf("Merge:\n got %s\nwant %s", got, want)
	}

	for _, bad := range []string{`[]`, `{"a":1} {}`, `{"meta":1,"meta":2}`, `{`, ``} {
		if _, err := Merge(f, []byte(bad), values); err == nil {
			t.Errorf("Merge(%q) succeeded", bad)
		}
	}
	// A form field the model gave twice is replaced once.
	got, err = Merge(f, []byte(`{"title":"a","title":"b"}`), map[string]any{"title": "c"})
	if err != nil || string(got) != `{"title":"c","due":null}` {
		t.Errorf("Merge with a repeated form key = %s, %v", got, err)
	}
	if _, err := Merge(Form{}, model, values); err == nil {
		t.Error("Merge with an unreadable form succeeded")
	}
}

func FuzzCheck(f *testing.F) {
	p := checkPolicy
	f.Add(full().Encode(), []byte(`{"title":"Hello","n":7,"tags":["a","a"],"ok":true}`))
	f.Add("title=&n=1e999&tags=&tags=a&ok=maybe", []byte(`{"n":"x","size":[1],"due":{}}`))
	f.Add("price=-.&size=0x10&at=2025-13-01T00:00:00Z", []byte(`[]`))
	form := askEmpty(f, load(f, "a", p))
	f.Fuzz(func(t *testing.T, query string, body []byte) {
		fields := map[string]bool{}
		for _, fd := range form.Fields() {
			fields[fd.Key] = true
		}
		answer, _ := url.ParseQuery(query)
		for _, check := range []func() (map[string]any, map[string][]string){
			func() (map[string]any, map[string][]string) { return Check(form, answer) },
			func() (map[string]any, map[string][]string) { return CheckJSON(form, body) },
		} {
			values, errs := check()
			for k := range values {
				if !fields[k] {
					t.Fatalf("values hold %q, which the form does not", k)
				}
				if errs[k] != nil {
					t.Fatalf("%q is both a value and an error", k)
				}
			}
			for k, rules := range errs {
				if k != "" && !fields[k] || len(rules) == 0 {
					t.Fatalf("errs[%q] = %q", k, rules)
				}
			}
			if _, err := Merge(form, []byte(`{"x":1}`), values); err != nil {
				t.Fatalf("Merge: %v", err)
			}
		}
	})
}
