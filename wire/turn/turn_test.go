package turn

import (
	"testing"

	"github.com/tidwall/gjson"
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
