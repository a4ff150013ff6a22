package policies

import (
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
)

const argsPolicy = `actions:
  create_post:
    effect: write
    schema:
      type: object
      properties:
        title: {type: string, minLength: 3, maxLength: 80}
        count: {type: integer, maximum: 10, minimum: 1}
        status: {enum: [draft, published]}
        email: {type: string, format: email}
        slug: {type: string, pattern: '^[a-z-]+$'}
        tags: {type: array, items: {type: string}, maxItems: 3}
        author:
          type: object
          properties: {name: {type: string}}
          required: [name]
      required: [title, count]
      additionalProperties: false
    run: {url: 'http://blog.internal/posts'}
  free_form:
    effect: write
    run: {url: 'http://blog.internal/free'}
`

func TestCheckArguments(t *testing.T) {
	p, err := Parse("p.yaml", []byte(argsPolicy))
	if err != nil {
		t.Fatal(err)
	}
	create := p.Action("create_post")
	tests := []struct {
		name string
		args string
		want []FieldError // nil: valid
	}{
		{"valid", `{"title":"Hello","count":2,"status":"draft","email":"a@b.example","tags":["x"]}`, nil},
		{"not an object", `["SECRET-VALUE-123"]`, []FieldError{{"", "must be a JSON object"}}},
		{"a string", `"SECRET-VALUE-123"`, []FieldError{{"", "must be a JSON object"}}},
		{"not JSON", `{"title": SECRET-VALUE-123}`, []FieldError{{"", "must be a JSON object"}}},
		{"two values", `{"title":"Hello","count":2} {}`, []FieldError{{"", "must be a JSON object"}}},
		{"empty", ``, []FieldError{{"", "must be a JSON object"}}},
		{"missing required", `{"status":"draft"}`, []FieldError{{"count", "required"}, {"title", "required"}}},
		{"wrong type", `{"title":12345,"count":"SECRET-VALUE-123"}`, []FieldError{{"count", "must be integer"}, {"title", "must be string"}}},
		{"bounds", `{"title":"SECRET-VALUE-123","count":11}`, []FieldError{{"count", "maximum 10"}}},
		{"minimum", `{"title":"Hi","count":0}`, []FieldError{{"count", "minimum 1"}, {"title", "at least 3 characters"}}},
		{"enum", `{"title":"Hello","count":1,"status":"SECRET-VALUE-123"}`, []FieldError{{"status", "must be one of the allowed values"}}},
		{"format", `{"title":"Hello","count":1,"email":"SECRET-VALUE-123"}`, []FieldError{{"email", "must be a valid email"}}},
		{"pattern", `{"title":"Hello","count":1,"slug":"SECRET-VALUE-123"}`, []FieldError{{"slug", "must match the pattern ^[a-z-]+$"}}},
		{"unknown field", `{"title":"Hello","count":1,"secret":"SECRET-VALUE-123"}`, []FieldError{{"secret", "unknown field"}}},
		{"nested", `{"title":"Hello","count":1,"tags":["a",7],"author":{}}`, []FieldError{{"author", "required at author.name"}, {"tags", "must be string at tags[1]"}}},
		{"too many items", `{"title":"Hello","count":1,"tags":["a","b","c","d"]}`, []FieldError{{"tags", "at most 3 items"}}},
		{"key twice", `{"title":"Hello","count":1,"title":"SECRET-VALUE-123"}`, []FieldError{{"title", "given twice"}}},
		{"nested key twice", `{"title":"Hello","count":1,"author":{"name":"a","name":"SECRET-VALUE-123"}}`, []FieldError{{"author", "repeats a key inside"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := create.CheckArguments([]byte(tt.args))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("CheckArguments = %v; want nil", err)
				}
				return
			}
			var ae *ArgumentError
			if !errors.As(err, &ae) {
				t.Fatalf("CheckArguments = %v (%T); want *ArgumentError", err, err)
			}
			if !reflect.DeepEqual(ae.Fields, tt.want) {
				t.Errorf("Fields = %q; want %q", ae.Fields, tt.want)
			}
			if msg := err.Error(); strings.Contains(msg, "SECRET-VALUE-123") || strings.Contains(msg, "12345") {
				t.Errorf("error echoes an argument value: %q", msg)
			}
		})
	}
}

func TestCheckArgumentsWithoutSchema(t *testing.T) {
	p, err := Parse("p.yaml", []byte(argsPolicy))
	if err != nil {
		t.Fatal(err)
	}
	free := p.Action("free_form")
	if err := free.CheckArguments([]byte(`{"anything": [1, {"goes": true}]}`)); err != nil {
		t.Errorf("object without schema: %v", err)
	}
	if err := free.CheckArguments([]byte(`7`)); err == nil {
		t.Error("non-object without schema: want error")
	}
}

func TestArgumentErrorMessage(t *testing.T) {
	e := &ArgumentError{Fields: []FieldError{{"post", "required"}, {"title", "must be string"}}}
	if got, want := e.Error(), "arguments: post: required; title: must be string"; got != want {
		t.Errorf("Error = %q; want %q", got, want)
	}
	e = &ArgumentError{Fields: []FieldError{{"", "must be a JSON object"}, {"a b;c", "unknown field"}}}
	if got, want := e.Error(), `arguments: must be a JSON object; "a b;c": unknown field`; got != want {
		t.Errorf("Error = %q; want %q", got, want)
	}
}

func TestCheckArgumentsAnyOf(t *testing.T) {
	p, err := Parse("p.yaml", []byte(`actions:
  pick:
    effect: write
    schema:
      type: object
      properties:
        id: {type: integer}
        slug: {type: string}
      anyOf:
        - required: [id]
        - required: [slug]
    run: {url: 'http://x/'}
`))
	if err != nil {
		t.Fatal(err)
	}
	err = p.Action("pick").CheckArguments([]byte(`{}`))
	if err == nil || err.Error() != "arguments: must match one of the allowed forms" {
		t.Errorf("CheckArguments = %v; want the whole-arguments anyOf rule", err)
	}
}

// TestCheckArgumentsConcurrent runs under -race: one loaded policy serves
// every request at once.
func TestCheckArgumentsConcurrent(t *testing.T) {
	p, err := Parse("p.yaml", []byte(argsPolicy))
	if err != nil {
		t.Fatal(err)
	}
	a := p.Action("create_post")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if err := a.CheckArguments([]byte(`{"title":"Hello","count":2}`)); err != nil {
					t.Error(err)
					return
				}
				if err := a.CheckArguments([]byte(`{"count":"x"}`)); err == nil {
					t.Error("invalid arguments passed")
					return
				}
			}
		})
	}
	wg.Wait()
}
