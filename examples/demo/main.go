// Command demo shows a confirmation card with one command and no provider
// key. From the repository's root:
//
//	go run ./examples/demo
//
// It runs, in this one process:
//
//   - the gate itself: Caddy with Toolgate on Caddyfile.example (the model
//     route on :8080, the person's pages on :8081, the MCP route on
//     :8082), its store and its log in a new temporary folder;
//   - a scripted stand-in for the model on :9101 (OpenAI Chat
//     Completions: it calls delete_post for post 7, and afterwards repeats
//     what the tool result said);
//   - a small blog app on :9102, whose DELETE /posts/{id} is the action
//     and checks the gate's signature;
//   - the app's chat: it sends "Delete my old meetup draft." through the
//     gate with openai-go, prints the reply with the link, waits for you to
//     answer in the browser and press Enter, then sends the next turn.
//
// With -mcp it shows the same card over MCP instead (see mcp.go). With
// -gate=false it uses a gate you started yourself in another terminal
// (go run ./cmd/toolgate run --config Caddyfile.example).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/toolgate/toolgate/actions"
)

// demoSecret signs the gate's requests to the blog when TOOLGATE_SECRET is
// not set. It is for this demo only.
const demoSecret = "demo-secret-not-for-production-0123456789"

// stdin is read by every prompt (the chat's and the MCP client's).
var stdin = bufio.NewReader(os.Stdin)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	overMCP := flag.Bool("mcp", false, "call delete_post from an MCP client through the gate's MCP route")
	inProcess := flag.Bool("gate", true, "start the gate in this process on -config; false: use a gate you started yourself")
	config := flag.String("config", "Caddyfile.example", "the gate's Caddyfile (with -gate)")
	api := flag.String("api", "http://localhost:8080/v1", "the gate's model route, as the app calls it")
	mcpURL := flag.String("mcp-url", "http://localhost:8082/mcp", "the gate's MCP route, as the MCP client calls it")
	modelAddr := flag.String("model", ":9101", "where the stand-in model listens")
	blogAddr := flag.String("blog", ":9102", "where the blog app listens")
	mcpAddr := flag.String("mcp-server", ":9103", "where the MCP server listens (with -mcp)")
	flag.Parse()
	fmt.Println("Toolgate demo: starting the gate, a stand-in model and a small blog app…")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	secret := os.Getenv("TOOLGATE_SECRET")
	if secret == "" {
		if !*inProcess {
			return errors.New("set TOOLGATE_SECRET to the gate's secret")
		}
		secret = demoSecret
		os.Setenv("TOOLGATE_SECRET", secret) // the Caddyfile reads {env.TOOLGATE_SECRET}
	}
	b := newBlog([]byte(secret))
	if err := serve(ctx, *modelAddr, http.HandlerFunc(model)); err != nil {
		return err
	}
	if err := serve(ctx, *blogAddr, b); err != nil {
		return err
	}
	if *inProcess {
		// A fresh folder each run: the demo's holds never mix with a
		// gate's in Caddy's data directory, nor its log with another run's.
		dir, err := os.MkdirTemp("", "toolgate-demo-")
		if err != nil {
			return err
		}
		fmt.Printf("The demo's gate keeps its store and log in %s (kept after the demo ends; delete it when done).\n", dir)
		stopGate, err := startGate(*config, dir)
		if err != nil {
			return err
		}
		defer stopGate()
		fmt.Printf("The gate runs in this process, on %s.\n  its store: %s\n  its log (who answered, what ran): %s\n", *config, storeDir(dir), logFile(dir))
	}
	if *overMCP {
		return mcpDemo(ctx, b, *mcpURL, *mcpAddr)
	}
	return chat(ctx, *api)
}

// chat is the app's side: one turn that the gate holds, the person's
// answer in the browser, and the next turn, where the model reads what
// happened.
func chat(ctx context.Context, api string) error {
	client := openai.NewClient(
		option.WithBaseURL(api),
		option.WithAPIKey("no-key-needed"),
		option.WithHeader("X-User-Id", "ana"),
		option.WithMaxRetries(0),
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
		return fmt.Errorf("asking through the gate at %s (with -gate=false, is it running?): %w", api, err)
	}
	msg := first.Choices[0].Message
	fmt.Printf("\nThe app asked the model to delete a meetup draft. The gate took the model's delete_post call out of the answer (tool calls the app received: %d); the app received this text instead:\n\n  %s\n\n", len(msg.ToolCalls), msg.Content)
	if err := waitForEnter(ctx, "Open the link in your browser, sign in as ana / demo, and press Confirm or Decline.\nThen come back here and press Enter (or press Enter now to see what happens when you do not answer)."); err != nil {
		return err
	}

	params.Messages = append(params.Messages, msg.ToParam(), openai.UserMessage("Did it work?"))
	second, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		return fmt.Errorf("the next turn: %w", err)
	}
	fmt.Printf("\nThe app sent the next turn; the gate put the call and its result back into the history. The model answered:\n\n  %s\n", second.Choices[0].Message.Content)
	return nil
}

// waitForEnter says what to do and waits for Enter (or Ctrl-C).
func waitForEnter(ctx context.Context, say string) error {
	fmt.Println(say)
	line := make(chan error, 1)
	go func() {
		_, err := stdin.ReadString('\n')
		line <- err
	}()
	select {
	case err := <-line:
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// serve listens on addr now (so a port in use is said at once) and serves
// h until ctx ends.
func serve(ctx context.Context, addr string, h http.Handler) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("the demo needs %s (is an earlier demo still running?): %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	context.AfterFunc(ctx, func() { _ = srv.Close() })
	return nil
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
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var toolResult string
	for _, m := range req.Messages {
		if m.Role == "tool" {
			_ = json.Unmarshal(m.Content, &toolResult)
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
		fmt.Printf("\n[blog app] post %s deleted by %s (Idempotency-Key %s)\n", id, r.Header.Get(actions.HeaderPerson), r.Header.Get(actions.HeaderIdempotency))
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"deleted":true}`)
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}
