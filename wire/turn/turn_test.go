package turn

import (
	"errors"
	"reflect"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider"
)

func TestSumUsage(t *testing.T) {
	for _, tc := range [][3]string{
		{`{"prompt_tokens":1,"total_tokens":3,"completion_tokens_details":{"reasoning_tokens":2},"x":"a"}`,
			`{"prompt_tokens":10,"total_tokens":30,"completion_tokens_details":{"reasoning_tokens":5,"audio_tokens":1},"y":1.5}`,
			`{"prompt_tokens":11,"total_tokens":33,"completion_tokens_details":{"reasoning_tokens":7,"audio_tokens":1},"x":"a","y":1.5}`},
		{"", `{"a":1}`, `{"a":1}`},
		{`{"a":1}`, "null", `{"a":1}`},
		{`{"a":1.5}`, `{"a":1}`, `{"a":2.5}`},
		{`{"a":9223372036854775807}`, `{"a":1}`, `{"a":9.223372036854776e+18}`},
	} {
		if got := SumUsage(tc[0], tc[1]); gjson.Get(got, "@this").Raw != tc[2] && got != tc[2] {
			t.Errorf("sumUsage(%s, %s) = %s, want %s", tc[0], tc[1], got, tc[2])
		}
	}
}

// fakeEnder records what EndStream asked of a stream.
type fakeEnder struct {
	err              error
	ending, cont     bool
	wrote            []string
	failAfterWriting error
}

func (f *fakeEnder) Err() error      { return f.err }
func (f *fakeEnder) Ending() bool    { return f.ending }
func (f *fakeEnder) Continued() bool { return f.cont }
func (f *fakeEnder) WriteEnd(text string) {
	f.wrote = append(f.wrote, text)
	f.err = f.failAfterWriting
}

// TestEndStreamWritesTheWithheldEnd: a finished response's withheld end
// gets End's text; else the Fail text; else a follow-up cut short gets
// "could not continue"; a stream with none of these, or one that failed,
// gets nothing; a failure while writing is returned.
func TestEndStreamWritesTheWithheldEnd(t *testing.T) {
	cut := provider.CouldNotContinue("the provider's answer ended early.")
	broken := errors.New("broken")
	for _, tc := range []struct {
		name     string
		s        fakeEnder
		failText string
		want     []string
		err      error
	}{
		{"ending", fakeEnder{ending: true, cont: true}, "failed", []string{"text"}, nil},
		{"fail text", fakeEnder{cont: true}, "failed", []string{"failed"}, nil},
		{"cut follow-up", fakeEnder{cont: true}, "", []string{cut}, nil},
		{"nothing withheld", fakeEnder{}, "", nil, nil},
		{"failed stream", fakeEnder{err: broken, ending: true}, "", nil, broken},
		{"failed writing", fakeEnder{ending: true, failAfterWriting: broken}, "", []string{"text"}, broken},
	} {
		c := Core[struct{}]{FailText: tc.failText}
		err := c.EndStream(&tc.s, "text")
		if !reflect.DeepEqual(tc.s.wrote, tc.want) || err != tc.err {
			t.Errorf("%s: wrote %q, err %v; want %q, %v", tc.name, tc.s.wrote, err, tc.want, tc.err)
		}
	}
}

// TestFinishWithEndsOnce: a JSON turn ends its answer with End's text; a
// second Finish gives the same answer and writes nothing.
func TestFinishWithEndsOnce(t *testing.T) {
	c := Core[string]{Acc: []byte("a"), Pending: new(string)}
	*c.Pending = "refused"
	add := func(body []byte, text string) ([]byte, error) { return append(append(body, ' '), text...), nil }
	fallback := func(s *string) string { return *s }
	s := &fakeEnder{ending: true}
	for range 2 {
		if out, err := c.FinishWith(s, fallback, add); string(out) != "a refused" || err != nil {
			t.Errorf("JSON: %q, %v", out, err)
		}
	}
	st := Core[string]{Streaming: true, Pending: new(string)}
	*st.Pending = "refused"
	if out, err := st.FinishWith(s, fallback, add); out != nil || err != nil || !reflect.DeepEqual(s.wrote, []string{"refused"}) {
		t.Errorf("stream: %q, %v, wrote %q", out, err, s.wrote)
	}
	if _, err := st.FinishWith(s, fallback, add); err != nil || len(s.wrote) != 1 {
		t.Errorf("a second Finish wrote %q, %v", s.wrote, err)
	}
}
