package interceptor

// Test helpers copied from provider/anthropic's tests (anthropic_test.go,
// anthropicrequest_test.go) for the interceptor's tests that drive the
// Anthropic adapter through the ResponseWriter (its turn, resumed answers,
// the guard). The stream builders and readers are
// provider/anthropic/anthropictest's; the fakes are provider/providertest's.

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider/providertest"
	wirestream "github.com/toolgate/toolgate/wire/stream"
)

func anthFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "fixtures", "anthropic", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func jsonEqual(t *testing.T, got, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Errorf("invalid JSON %q: %v", got, err)
		return false
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("invalid JSON %q: %v", want, err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	return bytes.Equal(gb, wb)
}

func anthFuzzHolder() *providertest.Holder {
	return providertest.NewHolder("get_weather", "delete_post").Passing("json").Refusing("updateIssueList", "refused: nothing (none)")
}

// anthBlocked reports whether a tool_use block of a name h blocks (held
// or refused) is started anywhere in a rewritten stream, where a client
// reads blocks: a content_block_start's block, a message_start's content.
func anthBlocked(h *providertest.Holder, out []byte) bool {
	found := false
	var s wirestream.Frame
	for _, ev := range providertest.Events(out) {
		data, ok := s.Data(ev)
		if !ok || !gjson.ValidBytes(data) {
			continue
		}
		r := gjson.ParseBytes(data)
		var blocks []gjson.Result
		switch r.Get("type").Str {
		case "content_block_start":
			blocks = []gjson.Result{r.Get("content_block")}
		case "message_start":
			blocks = r.Get("message.content").Array()
		}
		for _, cb := range blocks {
			if cb.Get("type").Str == "tool_use" && h.Blocks(cb.Get("name").Str) {
				found = true
			}
		}
	}
	return found
}

// A thinking block, a redacted_thinking block, then a held call: Hold gets
// them verbatim, with their signatures, as a request must echo them.
const (
	anthThinking  = "The person wants post 7 gone. Deleting is destructive."
	anthSignature = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
	anthRedacted  = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"
)
