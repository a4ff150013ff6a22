package gemini

import (
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/memo"
)

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		method, path, query string
		want                Endpoint
	}{
		// Gemini API, every version, unary and both stream framings.
		{"POST", "/v1beta/models/gemini-2.5-flash:generateContent", "", Endpoint{Kind: Generate, Model: "models/gemini-2.5-flash"}},
		{"POST", "/v1/models/gemini-2.5-flash:generateContent", "", Endpoint{Kind: Generate, Model: "models/gemini-2.5-flash"}},
		{"POST", "/v1alpha/models/gemini-2.0-flash-thinking-exp:generateContent", "", Endpoint{Kind: Generate, Model: "models/gemini-2.0-flash-thinking-exp"}},
		{"POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent", "alt=sse", Endpoint{Kind: Generate, Framing: SSE, Model: "models/gemini-2.5-flash"}},
		{"POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent", "alt=sse&key=k", Endpoint{Kind: Generate, Framing: SSE, Model: "models/gemini-2.5-flash"}},
		{"POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent", "$alt=sse", Endpoint{Kind: Generate, Framing: SSE, Model: "models/gemini-2.5-flash"}},
		{"POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent", "", Endpoint{Kind: Generate, Framing: JSONArray, Model: "models/gemini-2.5-flash"}},
		{"POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent", "alt=json", Endpoint{Kind: Generate, Framing: JSONArray, Model: "models/gemini-2.5-flash"}},
		{"POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent", "ALT=sse", Endpoint{Kind: Generate, Framing: JSONArray, Model: "models/gemini-2.5-flash"}},
		// A model id with '/'.
		{"POST", "/v1beta/tunedModels/my-model-x1:generateContent", "", Endpoint{Kind: Generate, Model: "tunedModels/my-model-x1"}},
		// Vertex: publisher model, endpoint, express mode.
		{"POST", "/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent", "", Endpoint{Kind: Generate, Model: "projects/p/locations/us-central1/publishers/google/models/gemini-2.5-flash"}},
		{"POST", "/v1beta1/projects/p/locations/global/publishers/google/models/gemini-3-flash-preview:streamGenerateContent", "alt=sse", Endpoint{Kind: Generate, Framing: SSE, Model: "projects/p/locations/global/publishers/google/models/gemini-3-flash-preview"}},
		{"POST", "/v1/projects/p/locations/l/endpoints/1234:generateContent", "", Endpoint{Kind: Generate, Model: "projects/p/locations/l/endpoints/1234"}},
		{"POST", "/v1/publishers/google/models/gemini-2.5-flash:streamGenerateContent", "alt=sse", Endpoint{Kind: Generate, Framing: SSE, Model: "publishers/google/models/gemini-2.5-flash"}},
		// Behind a path prefix, or cased oddly: still a generate request.
		{"POST", "/gemini/v1beta/models/m:generateContent", "", Endpoint{Kind: Generate}},
		{"POST", "/v1beta/models/m:GenerateContent", "", Endpoint{Kind: Generate, Model: "models/m"}},
		// alt that cannot be told apart, or a framing the gate cannot read.
		{"POST", "/v1beta/models/m:streamGenerateContent", "alt=sse&alt=json", Endpoint{Kind: AroundGate, Why: "ambiguous alt"}},
		{"POST", "/v1beta/models/m:streamGenerateContent", "alt=sse&$alt=json", Endpoint{Kind: AroundGate, Why: "ambiguous alt"}},
		{"POST", "/v1beta/models/m:streamGenerateContent", "alt=proto", Endpoint{Kind: AroundGate, Why: "ambiguous alt"}},
		{"POST", "/v1beta/models/m:streamGenerateContent", "alt=sse;x", Endpoint{Kind: AroundGate, Why: "ambiguous alt"}},
		{"POST", "/v1beta/models/m:streamGenerateContent", "x=%zz", Endpoint{Kind: Generate, Framing: JSONArray, Model: "models/m"}},
		// Around the gate.
		{"POST", "/v1beta/models/gemini-2.5-flash:batchGenerateContent", "", Endpoint{Kind: AroundGate, Why: "batch"}},
		{"GET", "/v1beta/batches/abc", "", Endpoint{Kind: AroundGate, Why: "batch"}},
		{"POST", "/v1beta/batches/abc:cancel", "", Endpoint{Kind: AroundGate, Why: "batch"}},
		{"POST", "/v1/projects/p/locations/l/batchPredictionJobs", "", Endpoint{Kind: AroundGate, Why: "batch"}},
		{"POST", "/v1beta/cachedContents", "", Endpoint{Kind: AroundGate, Why: "cached contents"}},
		{"PATCH", "/v1beta/cachedContents/xyz", "", Endpoint{Kind: AroundGate, Why: "cached contents"}},
		{"POST", "/v1beta1/projects/p/locations/l/cachedContents", "", Endpoint{Kind: AroundGate, Why: "cached contents"}},
		{"GET", "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent", "", Endpoint{Kind: AroundGate, Why: "live api"}},
		{"GET", "/ws/google.ai.generativelanguage.v1alpha.GenerativeService.BidiGenerateContentConstrained", "", Endpoint{Kind: AroundGate, Why: "live api"}},
		{"GET", "/ws/google.cloud.aiplatform.v1beta1.LlmBidiService/BidiGenerateContent", "", Endpoint{Kind: AroundGate, Why: "live api"}},
		{"POST", "/v1beta/interactions", "", Endpoint{Kind: AroundGate, Why: "interactions"}},
		{"GET", "/v1beta/interactions/abc", "", Endpoint{Kind: AroundGate, Why: "interactions"}},
		{"POST", "/v1/projects/p/locations/l/publishers/anthropic/models/claude:rawPredict", "", Endpoint{Kind: AroundGate, Why: "raw predict"}},
		{"POST", "/v1/projects/p/locations/l/publishers/anthropic/models/claude:streamRawPredict", "", Endpoint{Kind: AroundGate, Why: "raw predict"}},
		// Other: no call in the answer.
		{"POST", "/v1beta/models/gemini-2.5-flash:countTokens", "", Endpoint{}},
		{"POST", "/v1beta/models/text-embedding-004:embedContent", "", Endpoint{}},
		{"GET", "/v1beta/models", "", Endpoint{}},
		{"GET", "/v1beta/models/gemini-2.5-flash", "", Endpoint{}},
		// OpenAI-compatible: the Chat adapter's.
		{"POST", "/v1beta/openai/chat/completions", "", Endpoint{Kind: OpenAICompatible}},
		{"POST", "/v1beta1/projects/p/locations/l/endpoints/openapi/chat/completions", "", Endpoint{Kind: OpenAICompatible}},
	} {
		got := Classify(c.method, c.path, c.query)
		if got != c.want {
			t.Errorf("Classify(%s %s?%s) = %+v, want %+v", c.method, c.path, c.query, got, c.want)
		}
		if got.Streams() != (c.want.Kind == Generate && c.want.Framing != Unary) {
			t.Errorf("Streams(%s) = %v", c.path, got.Streams())
		}
	}
}

// TestClassifyReadsTheDecodedPath: a client may write the method's ':' as
// %3A; Go's URL.Path (what the glue passes) has it decoded, as Google's
// front end reads it.
func TestClassifyReadsTheDecodedPath(t *testing.T) {
	r, err := http.NewRequest("POST", "http://x/v1beta/models/m%3AstreamGenerateContent?alt=sse", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := Classify(r.Method, r.URL.Path, r.URL.RawQuery); got.Kind != Generate || got.Framing != SSE {
		t.Fatalf("got %+v", got)
	}
}

func FuzzClassify(f *testing.F) {
	f.Add("/v1beta/models/m:streamGenerateContent", "alt=sse")
	f.Add("/v1/projects/p/locations/l/endpoints/1:generateContent", "")
	f.Add("/v1beta/cachedContents/x", "")
	f.Fuzz(func(t *testing.T, path, query string) {
		e := Classify("POST", path, query)
		if e.Kind == Generate && e.Framing != Unary {
			// A stream is only ever named by its method.
			if !containsFold(path, ":streamgeneratecontent") {
				t.Fatalf("stream framing for %q", path)
			}
		}
		if e.Kind == AroundGate && e.Why == "" {
			t.Fatalf("no reason for %q", path)
		}
	})
}

// containsFold reports whether s holds sub (lower case) in any case.
func containsFold(s, sub string) bool { return strings.Contains(strings.ToLower(s), sub) }

// classifyURL answers each request as Classify does, in a random order over
// URLs that differ only in the query, the method or the case of the path
// (more than the memo's slots), so that another URL's answer sits in the
// slot each looks in.
func TestClassifyURLAsClassify(t *testing.T) {
	var urls []*url.URL
	for _, p := range []string{
		"/v1beta/models/gemini-2.5-flash:generateContent", "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
		"/v1beta/models/gemini-2.5-flash:streamgeneratecontent", "/v1beta/models/gemini-2.5-flash:countTokens",
		"/v1/projects/p/locations/l/publishers/google/models/m:streamGenerateContent", "/v1beta/cachedContents",
		"/v1beta/models/gemini-2.5-flash:batchGenerateContent",
	} {
		for _, q := range []string{"", "alt=sse", "alt=json", "alt=sse&alt=json", "alt=proto", "$alt=sse", "key=k&alt=sse"} {
			urls = append(urls, &url.URL{Path: p, RawQuery: q})
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 20000 {
		u := urls[rng.IntN(len(urls))]
		method := []string{"POST", "GET", "post"}[rng.IntN(3)]
		if got, want := classifyURL(method, u), Classify(method, u.Path, u.RawQuery); got != want {
			t.Fatalf("%s %s: %+v, Classify says %+v", method, u, got, want)
		}
	}
	// A query that may carry the API key is never kept.
	u := &url.URL{Path: "/v1beta/models/gemini-2.5-flash:streamGenerateContent", RawQuery: "alt=sse&key=AIzaSECRET"}
	classifyURL("POST", u)
	if classified.Cached(memo.Key{A: "POST", B: u.Path, C: u.RawQuery}) {
		t.Fatal("the memo keeps a query with the API key")
	}
	if u.RawQuery = "alt=sse"; classifyURL("POST", u) != Classify("POST", u.Path, u.RawQuery) || !classified.Cached(memo.Key{A: "POST", B: u.Path, C: u.RawQuery}) {
		t.Fatal("alt=sse alone is not kept")
	}
}
