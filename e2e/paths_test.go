package e2e

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/internal/testkit"
)

// A tolerant upstream routes many spellings of a gated path to the gated
// endpoint (Express ignores case and a trailing slash, servlet containers
// drop ";params", path cleaning folds "//" and dot segments, and the path
// arrives percent-decoded). Through the gate each of them is gated: the
// model's delete_post never reaches the app; it reads the waiting text and
// a link instead.
func TestOddPathsAreGated(t *testing.T) {
	e := newEnv(t, envOptions{})
	setupPost(e)
	body := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"Delete my old meetup draft."}]}`)
	for _, path := range []string{
		"/v1/chat/completions/",
		"/v1/Chat/Completions",
		"/V1/CHAT/COMPLETIONS/",
		"//v1/chat//completions",
		"/v1/chat%2Fcompletions",
		"/v1/chat/completions;x=1",
		"/v1/chat;v=1/completions",
		"/v1/chat/./completions",
		"/v1/chat/x/../completions",
	} {
		t.Run(path, func(t *testing.T) {
			e.provider.Enqueue(testkit.Reply{Body: jsonCompletion("", del7)})
			req, err := http.NewRequest("POST", e.apiURL+path, bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-User-Id", "ana")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			msg := gjson.GetBytes(b, "choices.0.message")
			if resp.StatusCode != 200 || msg.Get("tool_calls.#").Int() != 0 || !linkRe.MatchString(msg.Get("content").String()) {
				t.Errorf("got %d %s: want the call held behind a link", resp.StatusCode, b)
			}
		})
	}
	if n := len(e.app.Calls()); n != 0 {
		t.Errorf("the app ran %d calls", n)
	}
}
