// Command demo shows a confirmation card without a provider key. It runs
// what surrounds the gate in a real setup:
//
//   - a scripted stand-in for the model on :9101 (OpenAI Chat Completions:
//     it calls delete_post for post 7, and afterwards repeats what the tool
//     result said),
//   - a small blog app on :9102, whose DELETE /posts/{id} is the action and
//     checks the gate's signature,
//   - the app's chat: it sends "Delete my old meetup draft." through the gate
//     on :8080 with openai-go, prints the reply with the link, waits for you
//     to answer in the browser, then sends the next turn.
//
// With -mcp it shows the same card over MCP instead (see mcp.go).
//
// Start the gate first (see the README), then: go run ./examples/demo
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/toolgate/toolgate/actions"
)

func main() {
	secret := os.Getenv("TOOLGATE_SECRET")
	if secret == "" {
		log.Fatal("set TOOLGATE_SECRET to the gate's secret")
	}
	overMCP := flag.Bool("mcp", false, "call delete_post from an MCP client through the gate's MCP route (:8082)")
	flag.Parse()
	b := newBlog([]byte(secret))
	go serve(":9101", http.HandlerFunc(model))
	go serve(":9102", b)
	time.Sleep(200 * time.Millisecond)
	if *overMCP {
		mcpDemo(b)
		return
	}

	ctx := context.Background()
	client := openai.NewClient(
		option.WithBaseURL("http://localhost:8080/v1"),
		option.WithAPIKey("no-key-needed"),
		option.WithHeader("X-User-Id", "ana"),
	)
	params := openai.ChatCompletionNewParams{
		Model: "demo-model",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.UserMessage("Delete my old meetup draft."),
		},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
			Name:       "delete_post",
			Parameters: openai.FunctionParameters{"type": "object", "properties": map[string]any{"post": map[string]any{"type": "integer"}}, "required": []string{"post"}},
		})},
	}
	first, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		log.Fatalf("is the gate running on :8080? %v", err)
	}
	msg := first.Choices[0].Message
	fmt.Printf("\nThe app received (tool calls: %d):\n\n  %s\n\n", len(msg.ToolCalls), msg.Content)
	fmt.Println("Open the link, sign in as ana / demo, and Confirm or Decline. Then press Enter here.")
	bufio.NewReader(os.Stdin).ReadString('\n')

	params.Messages = append(params.Messages, msg.ToParam(), openai.UserMessage("Did it work?"))
	second, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("\nThe model answered:\n\n  %s\n", second.Choices[0].Message.Content)
}

func serve(addr string, h http.Handler) {
	log.Fatal(http.ListenAndServe(addr, h))
}

// model is the scripted stand-in: a tool call first, then an echo of the
// tool result the gate restored into the history.
func model(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	var toolResult string
	for _, m := range req.Messages {
		if m.Role == "tool" {
			json.Unmarshal(m.Content, &toolResult)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if toolResult != "" {
		fmt.Fprintf(w, `{"id":"chatcmpl-demo2","object":"chat.completion","created":%d,"model":"demo-model","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}]}`,
			time.Now().Unix(), "The tool said: "+toolResult)
		return
	}
	fmt.Fprintf(w, `{"id":"chatcmpl-demo1","object":"chat.completion","created":%d,"model":"demo-model","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_demo1","type":"function","function":{"name":"delete_post","arguments":"{\"post\":7}"}}]},"finish_reason":"tool_calls"}]}`,
		time.Now().Unix())
}

// blog is the app: posts to read, and the delete action.
type blog struct {
	secret []byte
	mu     sync.Mutex
	posts  map[string]string
}

func newBlog(secret []byte) *blog {
	return &blog{secret: secret, posts: map[string]string{"7": `{"id":7,"title":"Spring meetup","status":"draft"}`}}
}

func (b *blog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if err := actions.Verify(b.secret, r, body, time.Now(), 5*time.Minute); err != nil {
		http.Error(w, "bad signature: "+err.Error(), http.StatusUnauthorized)
		return
	}
	id := strings.TrimPrefix(r.URL.Path, "/posts/")
	b.mu.Lock()
	defer b.mu.Unlock()
	post, ok := b.posts[id]
	if !ok {
		http.Error(w, `{"message":"not found"}`, http.StatusNotFound)
		return
	}
	switch r.Method {
	case http.MethodGet:
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, post)
	case http.MethodDelete:
		delete(b.posts, id)
		log.Printf("blog: post %s deleted by %s (idempotency key %s)", id, r.Header.Get(actions.HeaderPerson), r.Header.Get(actions.HeaderIdempotency))
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"deleted":true}`)
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}
