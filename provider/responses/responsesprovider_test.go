package responses

import "testing"

// FuzzAroundParam: the byte filter in front of the parameter check never
// hides a parameter the full scan finds.
func FuzzAroundParam(f *testing.F) {
	f.Add([]byte(`{"functions":[{"name":"x"}]}`))
	f.Add([]byte(`{"Background":true}`))
	f.Add([]byte(`{"\u0066unctions":[1]}`))
	f.Add([]byte(`{"function_call":"none"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if got, full := (Responses{}).AroundParam(body), responsesParams(body); got != full {
			t.Fatalf("openai-responses %q: filtered %v, full scan %v", body, got, full)
		}
	})
}
