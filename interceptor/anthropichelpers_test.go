package interceptor

// Test helpers copied from provider/anthropic's tests (anthropic_test.go,
// anthropicrequest_test.go) for the interceptor's tests that drive the
// Anthropic adapter through the ResponseWriter (its turn, resumed answers,
// the guard). The stream builders and readers are
// provider/anthropic/anthropictest's; the fakes are provider/providertest's.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider/anthropic/anthropictest"
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

// anthHistoryError rejects a request history the way the Messages API does
// (wire-formats.md §3.4): every tool_use of an assistant message must be
// answered by a tool_result in the next message, a user message, where the
// tool_result blocks come first; a tool_result must answer a tool_use of
// the message right before it. Text blocks must not be empty.
func anthHistoryError(body []byte) error {
	if !gjson.ValidBytes(body) {
		return fmt.Errorf("invalid JSON")
	}
	msgs := gjson.GetBytes(body, "messages").Array()
	for i, m := range msgs {
		var results []string
		leading := true
		var uses map[string]bool
		if i > 0 && msgs[i-1].Get("role").Str == "assistant" {
			uses = anthropictest.UseIDs(msgs[i-1])
		}
		var bad error
		m.Get("content").ForEach(func(_, b gjson.Result) bool {
			switch b.Get("type").Str {
			case "tool_result":
				id := b.Get("tool_use_id").Str
				if m.Get("role").Str != "user" || !leading {
					bad = fmt.Errorf("messages.%d: tool_result %s is not at the start of a user message", i, id)
				} else if !uses[id] {
					bad = fmt.Errorf("messages.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, id)
				}
				results = append(results, id)
			case "text":
				leading = false
				if strings.TrimSpace(b.Get("text").Str) == "" {
					bad = fmt.Errorf("messages.%d: text content blocks must contain non-whitespace text", i)
				}
			default:
				leading = false
			}
			return bad == nil
		})
		if bad != nil {
			return bad
		}
		if m.Get("role").Str != "assistant" {
			continue
		}
		var missing []string
		answered := make(map[string]bool)
		if i+1 < len(msgs) && msgs[i+1].Get("role").Str == "user" {
			msgs[i+1].Get("content").ForEach(func(_, b gjson.Result) bool {
				if b.Get("type").Str != "tool_result" {
					return false
				}
				answered[b.Get("tool_use_id").Str] = true
				return true
			})
		}
		m.Get("content").ForEach(func(_, b gjson.Result) bool {
			if b.Get("type").Str == "tool_use" && !answered[b.Get("id").Str] {
				missing = append(missing, b.Get("id").Str)
			}
			return true
		})
		if len(missing) > 0 {
			return fmt.Errorf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i, strings.Join(missing, ", "))
		}
	}
	return nil
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
