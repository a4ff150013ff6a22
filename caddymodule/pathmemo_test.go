package caddymodule

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/internal/memo"
)

// memoPaths are paths every answer of pathFacts differs on: gated
// endpoints of each protocol in several spellings (the same canonical path
// sent differently must keep its own refusal text), endpoints around the
// gate, known paths, foreign ones, allowed ones, and a path longer than a
// slot keeps.
var memoPaths = []string{
	"/v1/chat/completions", "/V1/Chat/Completions/", "/v1/chat/completions;x=1",
	"/v1/responses", "/v1/responses/resp_1", "/v1/responses/resp_1/input_items",
	"/v1/messages", "/v1/messages/batches", "/v1/messages/count_tokens",
	"/v1beta/models/gemini-2.5-flash:generateContent", "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
	"/v1beta/models/gemini-2.5-flash:countTokens", "/v1beta/cachedContents", "/v1beta/batches/b1",
	"/v1/projects/p/locations/l/publishers/google/models/m:generateContent",
	"/v1/projects/p/locations/l/publishers/google/models/m:rawPredict",
	"/v1/embeddings", "/v1/batches", "/v1/realtime", "/v1/threads/t/runs",
	"/api/chat", "/API/Chat", "/generate", "/x/invoke", "/", "",
	"/v1/chat/completions/" + strings.Repeat("a", memo.MaxKey),
}

var memoMethods = []string{"POST", "post", "GET", "get", "DELETE", "PUT"}

// memoHandlers are routes whose answers differ for the same path: auto,
// fixed providers, allow_paths, allow.
func memoHandlers(t testing.TB) []*Handler {
	hs := []*Handler{
		{},
		{Provider: "openai-chat"},
		{Provider: "anthropic", AllowPaths: []string{"/api/chat", "/v1beta/*"}},
		{Provider: "gemini", Owner: "{http.request.header.X-User}", Allow: []string{"batches"}},
	}
	for _, h := range hs {
		if err := h.checkAllowPaths(); err != nil {
			t.Fatal(err)
		}
		h.paths = new(memo.Table[*pathFacts])
	}
	return hs
}

// checkFacts fails unless got is what the handler computes afresh for
// method and path.
func checkFacts(t testing.TB, h *Handler, method, path string, got *pathFacts) {
	t.Helper()
	want := (&Handler{Provider: h.Provider, allowPaths: h.allowPaths}).computePathFacts(memo.Key{A: method, B: path})
	if got.upper != want.upper ||
		got.protocol != want.protocol || !reflect.DeepEqual(got.around, want.around) || !reflect.DeepEqual(got.unknown, want.unknown) {
		t.Fatalf("route %q %v, %s %q: memo %+v, computed %+v", h.Provider, h.AllowPaths, method, path, *got, *want)
	}
}

// The memo answers every (route, method, path) as computing it afresh
// would, in a random order over more keys than it has slots, so that
// entries of other paths, other methods and other routes sit in the slot
// a request looks in.
func TestPathMemoAsComputed(t *testing.T) {
	hs := memoHandlers(t)
	rng := rand.New(rand.NewPCG(1, 2))
	hits := 0
	for range 20000 {
		h := hs[rng.IntN(len(hs))]
		method, path := memoMethods[rng.IntN(len(memoMethods))], memoPaths[rng.IntN(len(memoPaths))]
		if h.paths.Cached(memo.Key{A: method, B: path}) {
			hits++
		}
		checkFacts(t, h, method, path, h.pathFacts(method, path))
	}
	// The memo is used at all, and a path longer than a slot keeps is
	// never kept.
	if hits == 0 {
		t.Fatal("no lookup found its entry in the memo")
	}
	long := memoPaths[len(memoPaths)-1]
	for _, h := range hs {
		h.pathFacts("POST", long)
		if h.paths.Cached(memo.Key{A: "POST", B: long}) {
			t.Fatalf("the memo keeps a %d-byte path", len(long))
		}
	}
}

// Requests on the same routes at once each get their own path's facts.
func TestPathMemoConcurrent(t *testing.T) {
	hs := memoHandlers(t)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for range 2000 {
				h := hs[rng.IntN(len(hs))]
				method, path := memoMethods[rng.IntN(len(memoMethods))], memoPaths[rng.IntN(len(memoPaths))]
				checkFacts(t, h, method, path, h.pathFacts(method, path))
			}
		}()
	}
	wg.Wait()
}

// FuzzPathMemoAsComputed: two requests after each other on one route, and
// the first again, each answered as computed afresh, whatever slot they
// share.
func FuzzPathMemoAsComputed(f *testing.F) {
	for i, p := range memoPaths {
		f.Add(uint8(i), memoMethods[i%len(memoMethods)], p, memoMethods[(i+1)%len(memoMethods)], memoPaths[(i+3)%len(memoPaths)])
	}
	hs := memoHandlers(f)
	f.Fuzz(func(t *testing.T, route uint8, m1, p1, m2, p2 string) {
		h := hs[int(route)%len(hs)]
		for _, k := range [][2]string{{m1, p1}, {m2, p2}, {m1, p1}, {m2, p2}} {
			checkFacts(t, h, k[0], k[1], h.pathFacts(k[0], k[1]))
		}
	})
}

// BenchmarkPathFacts: what a request's path costs a route, found afresh
// and from the memo, for a Chat path (already canonical) and a Gemini one
// (lowered segment by segment).
func BenchmarkPathFacts(b *testing.B) {
	for _, path := range []string{"/v1/chat/completions", "/v1beta/models/gemini-2.5-flash:generateContent"} {
		h := &Handler{}
		b.Run(fmt.Sprintf("computed%s", path), func(b *testing.B) {
			for b.Loop() {
				h.computePathFacts(memo.Key{A: "POST", B: path})
			}
		})
		h.paths = new(memo.Table[*pathFacts])
		b.Run(fmt.Sprintf("memo%s", path), func(b *testing.B) {
			for b.Loop() {
				h.pathFacts("POST", path)
			}
		})
	}
}
