package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpDemo is the MCP side of the demo: an MCP server on mcpAddr whose
// delete_post tool deletes from the blog, and an MCP client (an IDE, say)
// that calls it through the gate's MCP route at mcpURL, signed in as ana.
// The gate answers with a URL to the card page; the client waits until you
// confirmed or declined there, then retries, and prints what came back.
func mcpDemo(ctx context.Context, b *blog, mcpURL, mcpAddr string) error {
	srv := mcp.NewServer(&mcp.Implementation{Name: "demo-blog", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "delete_post", Description: "Delete a blog post."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct {
			Post int `json:"post" jsonschema:"the post's id"`
		}) (*mcp.CallToolResult, any, error) {
			if !b.remove(strconv.Itoa(in.Post)) {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no such post"}}}, nil, nil
			}
			fmt.Printf("\n[MCP server] post %d deleted\n", in.Post)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("Post %d deleted.", in.Post)}}}, nil, nil
		})
	if err := serve(ctx, mcpAddr, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})); err != nil {
		return err
	}

	client := mcp.NewClient(&mcp.Implementation{Name: "demo-ide", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			fmt.Printf("\nThe MCP client called delete_post through the gate. The gate asks: %s\n\n  %s\n\n", req.Params.Message, req.Params.URL)
			if err := waitForEnter(ctx, "Open the link in your browser, sign in as ana / demo, and press Confirm or Decline.\nThen come back here and press Enter: the client continues the call."); err != nil {
				return nil, err
			}
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:             mcpURL,
		HTTPClient:           &http.Client{Transport: basicAuth{"ana", "demo"}},
		DisableStandaloneSSE: true,
	}, nil)
	if err != nil {
		return fmt.Errorf("connecting to the gate's MCP route at %s (with -gate=false, is it running, with TOOLGATE_MCP_UPSTREAM at this demo's %s?): %w", mcpURL, mcpAddr, err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "delete_post", Arguments: map[string]any{"post": 7}})
	if err != nil {
		return fmt.Errorf("calling delete_post: %w", err)
	}
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			fmt.Printf("\nThe tool answered (error: %t):\n\n  %s\n", res.IsError, t.Text)
		}
	}
	return nil
}

// basicAuth signs every request in, as an IDE configured with credentials
// for the platform would.
type basicAuth struct{ user, password string }

func (a basicAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.SetBasicAuth(a.user, a.password)
	return http.DefaultTransport.RoundTrip(r)
}

// remove deletes a post the way the MCP server's tool does.
func (b *blog) remove(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.posts[id]
	delete(b.posts, id)
	return ok
}
