package gemini

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// FuzzClassifyAsBefore: Classify, which lowers the path on the stack,
// answers as it did when it lowered it with strings.ToLower and read
// every query with url.ParseQuery (classifyReference, its code before).
func FuzzClassifyAsBefore(f *testing.F) {
	for _, p := range []string{
		"/v1beta/models/gemini-2.5-flash:streamGenerateContent", "/v1beta/models/m:generateContent",
		"/v1/projects/p/locations/l/publishers/google/models/m:STREAMgenerateCONTENT", "/v1beta/cachedContents/x",
		"/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent", "/v1beta/batches/1",
		"/v1beta/openai/chat/completions", "/v1beta/models/m:batchGenerateContent", "/v1beta/models/m:countTokens",
		"/v1beta/models/m:streamGenerateContent/", "/v1beta/models/m\u0130:generateContent", "/v1beta/İnteractions/x",
		"/v1beta/models/m:generateContent:x", "", "/", ":generatecontent",
	} {
		for _, q := range []string{"", "alt=sse", "alt=SSE", "alt=sse&alt=json", "$alt=sse", "alt=%zz", "key=k&alt=sse"} {
			f.Add(p, q)
		}
	}
	f.Fuzz(func(t *testing.T, path, query string) {
		if got, want := Classify("POST", path, query), classifyReference("POST", path, query); got != want {
			t.Fatalf("%q %q: %+v, before %+v", path, query, got, want)
		}
	})
}

func BenchmarkClassify(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if e := Classify("POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent", "alt=sse"); e.Framing != SSE {
			b.Fatal(e)
		}
	}
}

// classifyReference is Classify as it was before it lowered the path on
// the stack (paths.go at 4571db1).
func classifyReference(method, path, rawQuery string) Endpoint {
	last := path
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		last = path[i+1:]
	}
	lower := strings.ToLower(path)
	if strings.Contains(lower, "bidigeneratecontent") {
		return Endpoint{Kind: AroundGate, Why: "live api"}
	}
	if i := strings.LastIndexByte(last, ':'); i >= 0 {
		switch m := strings.ToLower(last[i+1:]); m {
		case methodGenerate, methodStream:
			e := Endpoint{Kind: Generate, Model: modelOf(path[:len(path)-len(last)+i])}
			if m == methodStream {
				f, ok := streamFramingReference(rawQuery)
				if !ok {
					return Endpoint{Kind: AroundGate, Why: "ambiguous alt"}
				}
				e.Framing = f
			}
			return e
		default:
			if why, ok := aroundMethods[m]; ok {
				return Endpoint{Kind: AroundGate, Why: why}
			}
		}
	}
	for _, seg := range strings.Split(lower, "/") {
		if i := strings.IndexByte(seg, ':'); i >= 0 {
			seg = seg[:i]
		}
		switch seg {
		case "cachedcontents":
			return Endpoint{Kind: AroundGate, Why: "cached contents"}
		case "batches", "batchpredictionjobs":
			return Endpoint{Kind: AroundGate, Why: "batch"}
		case "interactions":
			return Endpoint{Kind: AroundGate, Why: "interactions"}
		}
	}
	if strings.HasSuffix(lower, "/openai/chat/completions") || strings.HasSuffix(lower, "/openapi/chat/completions") {
		return Endpoint{Kind: OpenAICompatible}
	}
	return Endpoint{}
}

// streamFramingReference is streamFraming as it was before its fast
// cases for the queries the SDKs send.
func streamFramingReference(rawQuery string) (Framing, bool) {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		// Google's front end may read a query Go refuses; only alt matters
		// and it cannot be told apart for sure.
		if !strings.Contains(strings.ToLower(rawQuery), "alt") {
			return JSONArray, true
		}
		return 0, false
	}
	var alt string
	for _, k := range []string{"alt", "$alt"} {
		for _, v := range q[k] {
			v = strings.ToLower(v)
			if alt != "" && v != alt {
				return 0, false
			}
			alt = v
		}
	}
	switch alt {
	case "sse":
		return SSE, true
	case "", "json":
		return JSONArray, true
	}
	return 0, false
}

// aroundPaths are paths of each kind Classify reads around the gate, in
// cases and places the shortcut (mayBeAround) has to let through, and
// ones it answers itself.
var aroundPaths = []string{"/v1/chat/completions", "/v1beta/cachedContents", "/v1beta/batches/b1", "/v1beta/models/gemini-2.5-flash:batchGenerateContent",
	"/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent", "/v1beta/Interactions", "/v1/projects/p/locations/l/batchPredictionJobs",
	"/v1/projects/p/locations/l/publishers/google/models/m:rawPredict", "/v1beta/caches/CACHEDCONTENTS:x", "/v1beta/models/m:generateContent"}

// TestAroundAsClassify holds Around, with its shortcut (mayBeAround), to
// Classify on the joined path for aroundPaths.
func TestAroundAsClassify(t *testing.T) {
	for _, p := range aroundPaths {
		checkAround(t, p)
	}
}

// FuzzAroundAsClassify is TestAroundAsClassify on any path: the shortcut
// never hides a path Classify reads as around the gate.
func FuzzAroundAsClassify(f *testing.F) {
	for _, p := range aroundPaths {
		f.Add(p)
	}
	f.Fuzz(checkAround)
}

func checkAround(t *testing.T, path string) {
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	got := Provider{}.Around(http.MethodPost, segs, len(segs)-1)
	e := Classify(http.MethodPost, "/"+strings.Join(segs, "/"), "")
	if want := e.Kind == AroundGate; (got != nil) != want {
		t.Fatalf("%q: Around %v, Classify %+v", path, got, e)
	}
}
