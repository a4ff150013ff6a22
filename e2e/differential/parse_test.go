package differential

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	anth "github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	oresponses "github.com/openai/openai-go/v3/responses"
)

// parsed is what one client parser made of one response; the Node script
// prints the same shape.
type parsed struct {
	Status int          `json:"status"` // the HTTP status of an API error the SDK reported (0: none)
	Error  string       `json:"error"`  // the SDK's error ("" when none)
	Text   string       `json:"text"`
	Finish string       `json:"finish"` // finish reasons (Chat: per choice, comma-separated), status or stop reason
	Calls  []parsedCall `json:"calls"`  // the calls in the SDK's result (a stream's accumulated message)
	Names  []string     `json:"names"`  // every call name the app could read, stream events included; sorted, unique
}

type parsedCall struct {
	Type string `json:"type"`
	Name string `json:"name"`
	Args string `json:"args"`
}

// gatedNames returns the gated tool names the parse yields, as a call or a
// name seen on the way.
func (p parsed) gatedNames() []string {
	var out []string
	for _, n := range p.Names {
		if isGated(n) {
			out = append(out, n)
		}
	}
	for _, c := range p.Calls {
		if isGated(c.Name) && !slices.Contains(out, c.Name) {
			out = append(out, c.Name)
		}
	}
	return out
}

// refused reports whether the gate refused the response: an HTTP error
// answer, or for a stream (whose header left before its events could be
// read) an end in an error the SDK reports.
func (p parsed) refused(stream bool) bool { return p.Status >= 300 || (stream && p.Error != "") }

// same reports whether two parses agree on everything an app acts on: an
// error or not (and its status), the text, finish, calls and names. Error
// messages are not compared: they name the URL.
func (p parsed) same(o parsed) bool {
	return (p.Error == "") == (o.Error == "") && p.Status == o.Status && p.Text == o.Text &&
		p.Finish == o.Finish && slices.Equal(p.Calls, o.Calls) && slices.Equal(p.Names, o.Names)
}

func (p parsed) String() string {
	b, _ := json.Marshal(p)
	return string(b)
}

func (p *parsed) note(name string) {
	if name != "" {
		p.Names = append(p.Names, name)
	}
}

func (p *parsed) fail(err error) {
	var oe *openai.Error
	var ae *anth.Error
	switch {
	case errors.As(err, &oe):
		p.Status = oe.StatusCode
	case errors.As(err, &ae):
		p.Status = ae.StatusCode
	}
	p.Error = err.Error()
	if len(p.Error) > 300 {
		p.Error = p.Error[:300]
	}
}

// finishNames sorts and dedups the names.
func (p *parsed) finishNames() {
	slices.Sort(p.Names)
	p.Names = slices.Compact(p.Names)
}

// goRequest is one request of a Go SDK: where it goes and how.
type goRequest struct {
	provider string
	stream   bool
	baseURL  string            // the provider or the gate (no /v1)
	header   map[string]string // sent with the request
	client   *http.Client      // nil: the default
}

// goParse sends the request with openai-go (Chat, Responses) or
// anthropic-sdk-go (Messages) and returns what the SDK made of the answer.
// A panic in the SDK is a parse too (its message is the error).
func goParse(ctx context.Context, r goRequest) (p parsed) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	defer func() {
		if v := recover(); v != nil {
			p.Error = fmt.Sprintf("panic: %v", v)
		}
		p.finishNames()
	}()
	switch r.provider {
	case chat, responses:
		opts := []option.RequestOption{option.WithBaseURL(r.baseURL + "/v1"), option.WithAPIKey("test"), option.WithMaxRetries(0)}
		if r.client != nil {
			opts = append(opts, option.WithHTTPClient(r.client))
		}
		for k, v := range r.header {
			opts = append(opts, option.WithHeader(k, v))
		}
		c := openai.NewClient(opts...)
		if r.provider == chat {
			parseChat(ctx, &p, &c, r.stream)
		} else {
			parseResponses(ctx, &p, &c, r.stream)
		}
	case anthropic:
		opts := []aoption.RequestOption{aoption.WithBaseURL(r.baseURL), aoption.WithAPIKey("test"), aoption.WithMaxRetries(0)}
		if r.client != nil {
			opts = append(opts, aoption.WithHTTPClient(r.client))
		}
		for k, v := range r.header {
			opts = append(opts, aoption.WithHeader(k, v))
		}
		c := anth.NewClient(opts...)
		parseAnthropic(ctx, &p, &c, r.stream)
	default:
		p.Error = "unknown provider " + r.provider
	}
	return p
}

func parseChat(ctx context.Context, p *parsed, c *openai.Client, stream bool) {
	params := openai.ChatCompletionNewParams{Model: "gpt-4o", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Go on.")}}
	if !stream {
		comp, err := c.Chat.Completions.New(ctx, params)
		if err != nil {
			p.fail(err)
			return
		}
		chatCompletion(p, comp)
		return
	}
	s := c.Chat.Completions.NewStreaming(ctx, params)
	defer s.Close()
	var acc openai.ChatCompletionAccumulator
	for s.Next() {
		chunk := s.Current()
		acc.AddChunk(chunk)
		for _, ch := range chunk.Choices {
			for _, tc := range ch.Delta.ToolCalls {
				p.note(tc.Function.Name)
			}
			p.note(legacyDeltaName(ch.Delta))
		}
	}
	if err := s.Err(); err != nil {
		p.fail(err)
	}
	chatCompletion(p, &acc.ChatCompletion)
}

func chatCompletion(p *parsed, comp *openai.ChatCompletion) {
	var finishes []string
	for _, ch := range comp.Choices {
		m := ch.Message
		p.Text += m.Content
		for _, tc := range m.ToolCalls {
			p.note(tc.Function.Name)
			p.note(tc.Custom.Name)
			call := parsedCall{Type: tc.Type, Name: tc.Function.Name, Args: tc.Function.Arguments}
			if call.Name == "" && tc.Custom.Name != "" {
				call.Name, call.Args = tc.Custom.Name, tc.Custom.Input
			}
			p.Calls = append(p.Calls, call)
		}
		if name, args := legacyCall(m); name != "" || args != "" {
			p.note(name)
			p.Calls = append(p.Calls, parsedCall{Type: "function_call", Name: name, Args: args})
		}
		finishes = append(finishes, ch.FinishReason)
	}
	p.Finish = strings.Join(finishes, ",")
}

// legacyCall reads a message's deprecated function_call: an app on the
// legacy functions API still runs it.
func legacyCall(m openai.ChatCompletionMessage) (name, args string) {
	//lint:ignore SA1019 the legacy function_call is a call the gate must see (issue 8)
	fc := m.FunctionCall
	return fc.Name, fc.Arguments
}

// legacyDeltaName reads the name of a streamed legacy function_call.
func legacyDeltaName(d openai.ChatCompletionChunkChoiceDelta) string {
	//lint:ignore SA1019 the legacy function_call is a call the gate must see (issue 8)
	return d.FunctionCall.Name
}

func parseResponses(ctx context.Context, p *parsed, c *openai.Client, stream bool) {
	params := oresponses.ResponseNewParams{Model: "gpt-5.1", Input: oresponses.ResponseNewParamsInputUnion{OfString: openai.String("Go on.")}}
	if !stream {
		r, err := c.Responses.New(ctx, params)
		if err != nil {
			p.fail(err)
			return
		}
		responseObject(p, r)
		return
	}
	s := c.Responses.NewStreaming(ctx, params)
	defer s.Close()
	var final *oresponses.Response
	for s.Next() {
		ev := s.Current()
		p.note(ev.Item.Name)
		if ev.Type == "response.completed" || ev.Type == "response.incomplete" || ev.Type == "response.failed" {
			r := ev.Response
			final = &r
		}
	}
	if err := s.Err(); err != nil {
		p.fail(err)
	}
	if final != nil {
		responseObject(p, final)
	}
}

func responseObject(p *parsed, r *oresponses.Response) {
	for _, item := range r.Output {
		if item.Type == "message" {
			for _, part := range item.Content {
				if part.Type == "output_text" {
					p.Text += part.Text
				}
			}
			continue
		}
		p.note(item.Name)
		if item.Name != "" || item.JSON.Arguments.Valid() || item.JSON.Input.Valid() {
			args := item.Arguments.OfString
			if item.JSON.Input.Valid() {
				args = item.Input
			}
			p.Calls = append(p.Calls, parsedCall{Type: item.Type, Name: item.Name, Args: args})
		}
	}
	p.Finish = string(r.Status)
}

func parseAnthropic(ctx context.Context, p *parsed, c *anth.Client, stream bool) {
	params := anth.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 512,
		Messages: []anth.MessageParam{anth.NewUserMessage(anth.NewTextBlock("Go on."))}}
	if !stream {
		m, err := c.Messages.New(ctx, params)
		if err != nil {
			p.fail(err)
			return
		}
		message(p, m)
		return
	}
	s := c.Messages.NewStreaming(ctx, params)
	defer s.Close()
	var m anth.Message
	for s.Next() {
		ev := s.Current()
		p.note(ev.ContentBlock.Name)
		if err := m.Accumulate(ev); err != nil {
			p.fail(err)
			break
		}
	}
	if err := s.Err(); err != nil && p.Error == "" {
		p.fail(err)
	}
	message(p, &m)
}

func message(p *parsed, m *anth.Message) {
	for _, b := range m.Content {
		if b.Type == "text" {
			p.Text += b.Text
			continue
		}
		p.note(b.Name)
		if b.Name != "" || b.JSON.Input.Valid() {
			p.Calls = append(p.Calls, parsedCall{Type: b.Type, Name: b.Name, Args: compactJSON(b.Input)})
		}
	}
	p.Finish = string(m.StopReason)
}

// compactJSON writes valid JSON without whitespace, else leaves it be.
func compactJSON(b []byte) string {
	var out bytes.Buffer
	if json.Compact(&out, b) == nil {
		return out.String()
	}
	return string(b)
}
