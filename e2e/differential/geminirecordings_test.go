package differential

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/testkit"
)

// The recorded Gemini answers (testdata/fixtures/gemini at the module's
// root, sources in its README) as the three clients read them.

// geminiRecording is one recorded answer and how it was asked for.
type geminiRecording struct {
	file   string
	stream bool // asked with :streamGenerateContent?alt=sse
	status int
}

var geminiRecordings = []geminiRecording{
	{"function-call.json", false, 200},
	{"gemini3-thought-then-function-call.json", false, 200},
	{"parallel-function-calls.json", false, 200},
	{"vertex-parallel-function-calls-3.json", false, 200},
	{"stream-function-call.sse", true, 200},
	{"stream-function-call-gemini3.sse", true, 200},
	{"stream-parallel-function-calls.sse", true, 200},
	{"vertex-stream-partial-args.sse", true, 200},
	{"vertex-stream-thought-no-args-and-partial-args.sse", true, 200},
	{"stream-error-400.json", true, 400},
	{"stream-error-400.json", false, 400},
}

// partialArgs reports whether a recording streams a call's arguments
// (Vertex partialArgs): @ai-sdk/google joins them into the call's args;
// the genai clients hand the app each fragment as it came, so a call's
// own part has no args and the fragments follow in parts without a name.
func partialArgs(body []byte) bool { return bytes.Contains(body, []byte(`"partialArgs"`)) }

// geminiTools are the functions the recordings call: the app declares
// them, as an app that gets these calls does.
var geminiTools = []string{"weather", "best_language_to_learn", "dice_roll", "get_country", "secret_retrieval_tool",
	"getWeather", "read_theme", "read_screen", "pelican_name_generator", "add_person"}

// oracleSeen is what an app must see of the given responses (each one
// GenerateContentResponse as JSON), read without any client: the spec's
// reading, for the tests to hold each client to.
func oracleSeen(t testing.TB, responses [][]byte) geminiSeen {
	t.Helper()
	var s geminiSeen
	for _, raw := range responses {
		var r struct {
			Candidates []struct {
				Content struct {
					Parts []map[string]json.RawMessage `json:"parts"`
				} `json:"content"`
				FinishReason string `json:"finishReason"`
			} `json:"candidates"`
			Usage *struct {
				Prompt     int `json:"promptTokenCount"`
				Candidates int `json:"candidatesTokenCount"`
				Thoughts   int `json:"thoughtsTokenCount"`
				Total      int `json:"totalTokenCount"`
			} `json:"usageMetadata"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatalf("oracle: %v in %.200q", err, raw)
		}
		s.Chunks++
		if u := r.Usage; u != nil {
			s.Usage = &geminiUsage{u.Prompt, u.Candidates, u.Thoughts, u.Total}
		}
		if len(r.Candidates) == 0 {
			continue
		}
		c := r.Candidates[0]
		if c.FinishReason != "" {
			s.Finish = c.FinishReason
		}
		for _, p := range c.Content.Parts {
			var sig string
			_ = json.Unmarshal(p["thoughtSignature"], &sig)
			if fc, ok := p["functionCall"]; ok {
				var call struct {
					Name string         `json:"name"`
					Args map[string]any `json:"args"`
					ID   string         `json:"id"`
				}
				if err := json.Unmarshal(fc, &call); err != nil {
					t.Fatalf("oracle: %v", err)
				}
				if call.Name != "" {
					if call.Args == nil {
						call.Args = map[string]any{}
					}
					s.Calls = append(s.Calls, geminiCall{call.Name, canonicalJSON(call.Args), call.ID, sig})
				}
				continue
			}
			var text string
			var thought bool
			_ = json.Unmarshal(p["text"], &text)
			_ = json.Unmarshal(p["thought"], &thought)
			if thought {
				s.Thought += text
			} else {
				s.Text += text
			}
			if sig != "" {
				s.Signatures = append(s.Signatures, sig)
			}
		}
	}
	return s
}

// sseData is the data of each event of an alt=sse body written as Gemini
// writes it (one data: line an event).
func sseData(body []byte) [][]byte {
	var out [][]byte
	for _, ev := range bytes.Split(body, []byte("\r\n\r\n")) {
		if d, ok := bytes.CutPrefix(ev, []byte("data: ")); ok {
			out = append(out, d)
		}
	}
	return out
}

// TestGeminiClientsReadTheRecordings: each client reads each recorded
// answer (unary, alt=sse, an HTTP 400 to a stream and to a unary request)
// as the spec's reading of its bytes says (text, thoughts, calls with
// name, args, id and thoughtSignature, finish reason, usage, the error's
// status), except the one difference below; every client asks a stream
// with alt=sse and none ever asks for the JSON-array stream.
func TestGeminiClientsReadTheRecordings(t *testing.T) {
	srv := newGeminiServer(t)
	var cases []geminiCase
	for _, r := range geminiRecordings {
		body := testkit.Fixture(t, "gemini", r.file)
		a := jsonAnswer(r.status, body)
		if r.stream {
			a.Header = http.Header{"Content-Type": {"text/event-stream"}}
			if r.status == 200 {
				a.Pieces = sseEvents(body)
			}
		}
		cases = append(cases, geminiCase{name: recordingName(r), stream: r.stream, tools: geminiTools, answer: a})
	}
	seen, withNode := geminiReadings(t, srv, cases)
	for i, r := range geminiRecordings {
		c := cases[i]
		body := testkit.Fixture(t, "gemini", r.file)
		t.Run(c.name, func(t *testing.T) {
			var want geminiSeen
			switch {
			case r.status != 200:
				want = geminiSeen{Status: r.status, Error: "an API error"}
			case r.stream:
				want = oracleSeen(t, sseData(body))
			default:
				want = oracleSeen(t, [][]byte{body})
			}
			if r.status == 200 && len(want.Calls) == 0 {
				t.Fatalf("the oracle finds no call in %s", r.file)
			}
			for _, client := range geminiClients {
				got, ok := seen[c.name][client]
				if !ok {
					if client == goGenai || withNode {
						t.Errorf("%s: no reading", client)
					}
					continue
				}
				if r.status != 200 {
					got.Error = strings.Repeat("x", min(len(got.Error), 1)) // compared as error or not
					want.Error = "x"
				}
				if client == aiSDK && partialArgs(body) {
					// @ai-sdk/google joins the streamed argument fragments
					// into each call's args (GoogleJSONAccumulator); the
					// genai clients hand the app the call's first part,
					// without args. Names, ids, signatures and the rest
					// agree.
					if !slices.Equal(got.callNames(), want.callNames()) {
						t.Errorf("%s: calls %v, want %v", client, got.callNames(), want.callNames())
					}
					for j := range min(len(got.Calls), len(want.Calls)) {
						got.Calls[j].Args = want.Calls[j].Args
					}
				}
				if !got.same(want) {
					t.Errorf("%s read %s otherwise than its bytes say\n got:  %s\n want: %s", client, r.file, got, want)
				}
			}
			// How each client asked: a stream with alt=sse, a unary
			// answer without; the Gemini API's v1beta path (go-genai,
			// @ai-sdk/google) or v1 (@google/genai 3's default).
			for _, req := range srv.requestsOf(c.name) {
				wantSuffix := ":generateContent"
				if r.stream {
					wantSuffix = ":streamGenerateContent?alt=sse"
				}
				if !strings.HasPrefix(req, "POST /v1") || !strings.HasSuffix(req, "/models/"+geminiModel+wantSuffix) {
					t.Errorf("a client asked %q, want POST …/models/%s%s", req, geminiModel, wantSuffix)
				}
			}
		})
	}
}

// recordingName names a recording's case.
func recordingName(r geminiRecording) string {
	if r.stream {
		return "stream/" + r.file
	}
	return "unary/" + r.file
}
