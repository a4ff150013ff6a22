package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/internal/testkit"
)

// formPost posts a form answer with extra fields, optionally as a
// Precognition check, and returns the status and body.
func (e *env) formPost(p person, link, holdID, token string, fields url.Values, precognition bool) (int, string) {
	e.t.Helper()
	form := url.Values{"hold": {holdID}, "token": {token}, "answer": {"submit"}}
	for k, v := range fields {
		form[k] = v
	}
	var h map[string]string
	if precognition {
		h = map[string]string{"Precognition": "true", "Accept": "application/json"}
	}
	return e.post(p, link, form, h)
}

// rawView reads the step's JSON as raw bytes.
func (e *env) rawView(p person, link, lang string) []byte {
	e.t.Helper()
	req, _ := http.NewRequest("GET", link, nil)
	req.SetBasicAuth(p.name, p.password)
	req.Header.Set("Accept", "application/json")
	if lang != "" {
		req.Header.Set("Accept-Language", lang)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		e.t.Fatalf("view: %d %s", resp.StatusCode, b)
	}
	return b
}

var draftTitleOnly = call{"call_draft", "draft_post", `{"title":"Launch notes"}`, false}

func TestFormForMissingFields(t *testing.T) {
	e := newEnv(t, envOptions{})
	l, msg := e.hold(t, "ana", draftTitleOnly)
	if !strings.HasPrefix(msg.Content, "Waiting for your answer: A few details for your post.") || l == "" {
		t.Fatalf("app received %q", msg.Content)
	}
	raw := e.rawView(ana, l, "")
	form := gjson.GetBytes(raw, "holds.0.form")
	if form.Get("mode").String() != "form" || form.Get("message").String() != "A few details for your post." {
		t.Errorf("form = %s", form.Raw)
	}
	// Fields in schema order: the confirm field, then the missing ones.
	var keys []string
	form.Get("requestedSchema.properties").ForEach(func(k, _ gjson.Result) bool { keys = append(keys, k.String()); return true })
	if strings.Join(keys, ",") != "title,body,status" {
		t.Errorf("form fields = %v", keys)
	}
	if got := form.Get("requestedSchema.properties.title.default").String(); got != "Launch notes" {
		t.Errorf("title opens on %q, want the model's accepted value", got)
	}
	if got := form.Get("requestedSchema.properties.status.default").String(); got != "draft" {
		t.Errorf("status opens on %q, want the policy default", got)
	}
	if got := form.Get("x-toolgate-textarea").Raw; got != `["body"]` {
		t.Errorf("textarea hint = %s", got)
	}
	if req := form.Get("requestedSchema.required").Raw; !strings.Contains(req, "body") || !strings.Contains(req, "status") {
		t.Errorf("required = %s", req)
	}
	// Titles follow the person's language.
	de := gjson.GetBytes(e.rawView(ana, l, "de-DE,de;q=0.9"), "holds.0.form.requestedSchema.properties.body.title").String()
	if de != "Inhalt" {
		t.Errorf("German title = %q", de)
	}
	if n := len(e.app.Calls()); n != 0 {
		t.Fatal("an incomplete call ran")
	}
}

func TestFormAnswerAndHistory(t *testing.T) {
	e := newEnv(t, envOptions{})
	l, msg := e.hold(t, "ana", draftTitleOnly)
	_, _, s := e.view(ana, l)
	id, tok := s.Holds[0].ID, s.Tokens[s.Holds[0].ID]

	// Precognition: errors by field, nothing runs.
	st, body := e.formPost(ana, l, id, tok, url.Values{"title": {"Launch notes"}, "body": {""}, "status": {"archived"}}, true)
	if st != http.StatusUnprocessableEntity || !gjson.Get(body, "errors.body").Exists() || !gjson.Get(body, "errors.status").Exists() {
		t.Errorf("precognition 422: %d %s", st, body)
	}
	if strings.Contains(body, "archived") {
		t.Errorf("an error echoes the value: %s", body)
	}
	answer := url.Values{"title": {"Launch notes v2"}, "body": {"PERSON-BODY-TEXT"}, "status": {"published"}, "sneaky": {"extra"}}
	if st, body := e.formPost(ana, l, id, tok, answer, true); st != http.StatusNoContent {
		t.Errorf("precognition 204: %d %s", st, body)
	}
	if n := len(e.app.Calls()); n != 0 {
		t.Fatal("a precognition request ran the action")
	}
	if st, body := e.formPost(ana, l, id, tok, answer, false); st != http.StatusSeeOther {
		t.Fatalf("submit: %d %s", st, body)
	}
	calls := e.app.Calls()
	if len(calls) != 1 {
		t.Fatalf("ran %d times", len(calls))
	}
	var got map[string]any
	if err := json.Unmarshal(calls[0].Body, &got); err != nil {
		t.Fatal(err)
	}
	if got["title"] != "Launch notes v2" || got["body"] != "PERSON-BODY-TEXT" || got["status"] != "published" || got["sneaky"] != nil {
		t.Errorf("action got %s", calls[0].Body)
	}
	if calls[0].SignatureErr != nil || calls[0].URI != "/posts" || calls[0].Method != "POST" {
		t.Errorf("release %s %s signature=%v", calls[0].Method, calls[0].URI, calls[0].SignatureErr)
	}
	// A second submit: 409.
	if st, _ := e.formPost(ana, l, id, tok, answer, false); st != http.StatusConflict {
		t.Errorf("second submit: %d", st)
	}
	req := e.next(t, "ana", msg, "thanks")
	if got := toolResult(req, "call_draft"); got != "The person filled in: title, body, status. Drafted." {
		t.Errorf("tool result = %q", got)
	}
	if bytes.Contains(req, []byte("PERSON-BODY-TEXT")) || bytes.Contains(req, []byte("Launch notes v2")) {
		t.Errorf("the person's values reached the model: %s", req)
	}
}

func TestFormEmptyFieldsCheckboxAndMultiSelect(t *testing.T) {
	e := newEnv(t, envOptions{})
	// featured and tags are confirmed by nothing: make them part of the
	// form by giving invalid values the form can hold.
	l, _ := e.hold(t, "ana", call{"call_d2", "draft_post", `{"title":"T","featured":"yes","tags":"news","publish_at":"soon"}`, false})
	_, raw, s := e.view(ana, l)
	if len(s.Holds) != 1 {
		t.Fatalf("view: %s", raw)
	}
	id, tok := s.Holds[0].ID, s.Tokens[s.Holds[0].ID]
	// featured unchecked (absent), tags: nothing chosen (the hidden empty
	// value), publish_at left empty.
	answer := url.Values{"title": {"T"}, "body": {"B"}, "status": {"draft"}, "tags": {""}, "publish_at": {""}}
	if st, body := e.formPost(ana, l, id, tok, answer, false); st != http.StatusSeeOther {
		t.Fatalf("submit: %d %s", st, body)
	}
	calls := e.app.Calls()
	if len(calls) != 1 {
		t.Fatalf("ran %d times", len(calls))
	}
	b := calls[0].Body
	if gjson.GetBytes(b, "featured").Raw != "false" {
		t.Errorf("unchecked checkbox: featured = %s", gjson.GetBytes(b, "featured").Raw)
	}
	if gjson.GetBytes(b, "tags").Raw != "[]" {
		t.Errorf("empty multi-select: tags = %s", gjson.GetBytes(b, "tags").Raw)
	}
	if v := gjson.GetBytes(b, "publish_at"); v.Exists() && v.Raw != "null" {
		t.Errorf("empty field filled from the model: publish_at = %s", v.Raw)
	}
}

func TestFormDecline(t *testing.T) {
	e := newEnv(t, envOptions{})
	l, msg := e.hold(t, "ana", draftTitleOnly)
	if st := e.answerOnly(ana, l, "decline"); st != http.StatusSeeOther {
		t.Fatalf("decline: %d", st)
	}
	if n := len(e.app.Calls()); n != 0 {
		t.Fatal("a declined form ran")
	}
	if got := toolResult(e.next(t, "ana", msg, "ok"), "call_draft"); got != "The person declined to fill in title, body, status; nothing ran." {
		t.Errorf("tool result = %q", got)
	}
}

func TestFormNeverShowsDirectionCharacters(t *testing.T) {
	e := newEnv(t, envOptions{})
	l, _ := e.hold(t, "ana", call{"call_d3", "draft_post", `{"title":"evil\u202egnp.exe"}`, false})
	raw := e.rawView(ana, l, "")
	if bytes.Contains(raw, []byte("gnp.exe")) || bytes.Contains(raw, []byte("evil")) {
		t.Errorf("a value with a direction character was shown: %s", raw)
	}
}

func TestCompleteCallPassesUntouched(t *testing.T) {
	e := newEnv(t, envOptions{})
	body := jsonCompletion("", call{"call_full", "draft_post", `{"title":"T","body":"B","status":"draft"}`, false})
	e.provider.Enqueue(testkit.Reply{Body: body})
	_, _, got := e.rawPost(t, "ana", `{"model":"gpt-4o","messages":[{"role":"user","content":"x"}]}`)
	if !bytes.Equal(got, body) {
		t.Errorf("a complete valid call changed:\n%s", got)
	}
}

func TestNineCallsOneRefused(t *testing.T) {
	e := newEnv(t, envOptions{})
	var calls []call
	for i := range 9 {
		calls = append(calls, call{"call_n" + string(rune('a'+i)), "draft_post", `{"title":"T"}`, false})
	}
	e.provider.Enqueue(testkit.Reply{Body: jsonCompletion("", calls...)}, testkit.Reply{Body: textCompletion("I will ask about the ninth later.")})
	got, err := e.client("ana").Chat.Completions.New(ctx, userAsks("nine"))
	if err != nil {
		t.Fatal(err)
	}
	l := link(t, got.Choices[0].Message.Content)
	if _, _, s := e.view(ana, l); len(s.Holds) != 8 {
		t.Errorf("step holds %d, want 8", len(s.Holds))
	}
	reqs := e.provider.Requests()
	if len(reqs) != 2 || !strings.Contains(toolResult(reqs[1], "call_ni"), "at most 8") {
		t.Errorf("the ninth call's refusal did not go back to the model at once: %d requests", len(reqs))
	}
	if !strings.Contains(got.Choices[0].Message.Content, "I will ask about the ninth later.") {
		t.Errorf("the model's follow-up did not reach the app: %q", got.Choices[0].Message.Content)
	}
}

func TestTwoFormsAndACardReleasedTogether(t *testing.T) {
	e := newEnv(t, envOptions{})
	setupPost(e)
	l, msg := e.hold(t, "ana", call{"call_f1", "draft_post", `{"title":"A"}`, false}, call{"call_f2", "draft_post", `{"title":"B"}`, false}, del7)
	_, raw, s := e.view(ana, l)
	if len(s.Holds) != 3 {
		t.Fatalf("step: %s", raw)
	}
	fill := url.Values{"body": {"x"}, "status": {"draft"}}
	for i, h := range s.Holds[:2] {
		f := url.Values{"title": {[]string{"A", "B"}[i]}}
		for k, v := range fill {
			f[k] = v
		}
		if st, body := e.formPost(ana, l, h.ID, s.Tokens[h.ID], f, false); st != http.StatusSeeOther {
			t.Fatalf("form %d: %d %s", i, st, body)
		}
		if n := len(e.app.Calls()); n != 0 {
			t.Fatalf("released before every question had an answer (%d runs)", n)
		}
	}
	if st, _ := e.answer(ana, l, s.Holds[2].ID, s.Tokens[s.Holds[2].ID], "confirm", nil); st != http.StatusSeeOther {
		t.Fatalf("confirm: %d", st)
	}
	if n := len(e.app.Calls()); n != 3 {
		t.Fatalf("released %d of 3", n)
	}
	req := e.next(t, "ana", msg, "done?")
	for _, id := range []string{"call_f1", "call_f2"} {
		if got := toolResult(req, id); !strings.HasPrefix(got, "The person filled in: title, body, status.") {
			t.Errorf("%s: %q", id, got)
		}
	}
	if got := toolResult(req, "call_del7"); got != "The person confirmed. Removed." {
		t.Errorf("card: %q", got)
	}
}

func TestSecretFieldRefusedWithContinuation(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, stream := range []bool{false, true} {
		followUp := "Which service should I rotate, and can you set the key yourself?"
		first := []call{{"call_key", "rotate_key", `{"service":"mail"}`, false}}
		if stream {
			e.provider.Enqueue(testkit.Reply{Events: streamEvents([]string{"Rotating. "}, first...)}, testkit.Reply{Events: streamEvents([]string{followUp})})
			acc := streamWith(t, e.client("ana"), userAsks("rotate my mail key"))
			if c := acc.Choices[0].Message.Content; !strings.HasPrefix(c, "Rotating.") || !strings.HasSuffix(c, followUp) || strings.Contains(c, "Toolgate") {
				t.Errorf("stream content = %q", c)
			}
			if len(acc.Choices[0].Message.ToolCalls) != 0 || acc.Choices[0].FinishReason != "stop" {
				t.Errorf("stream calls %v finish %q", acc.Choices[0].Message.ToolCalls, acc.Choices[0].FinishReason)
			}
		} else {
			e.provider.Enqueue(testkit.Reply{Body: jsonCompletion("", first...)}, testkit.Reply{Body: textCompletion(followUp)})
			got, err := e.client("ana").Chat.Completions.New(ctx, userAsks("rotate my mail key"))
			if err != nil {
				t.Fatal(err)
			}
			if c := got.Choices[0].Message.Content; !strings.Contains(c, followUp) || strings.Contains(c, "Toolgate refused") {
				t.Errorf("json content = %q", c)
			}
		}
		reqs := e.provider.Requests()
		last := reqs[len(reqs)-1]
		res := toolResult(last, "call_key")
		if !strings.Contains(res, "apiKey") || !strings.Contains(res, "secret") {
			t.Errorf("the model was not told which field: %q", res)
		}
	}
	if n := len(e.app.Calls()); n != 0 {
		t.Error("a refused call ran")
	}
}

func TestToolsOfferedAsThePolicySays(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.provider.Enqueue(testkit.Reply{Body: textCompletion("ok")})
	req := `{"model":"gpt-4o","messages":[{"role":"user","content":"x"}],"tools":[` +
		`{"type":"function","function":{"name":"schedule_post","description":"Schedule a post.","parameters":{"type":"object","properties":{"post":{"type":"integer"},"publish_on":{"type":["string","null"],"format":"date"}},"required":["post"]}}},` +
		`{"type":"function","function":{"name":"draft_post","parameters":{"type":"object","properties":{"title":{"type":"string"}},"required":["title"]}}},` +
		`{"type":"function","function":{"name":"lookup_thing","description":"Not ours.","parameters":{"type":"object"}}}]}`
	if st, _, body := e.rawPost(t, "ana", req); st != 200 {
		t.Fatalf("%d %s", st, body)
	}
	up := e.provider.Requests()[0]
	sched := gjson.GetBytes(up, `tools.0.function`)
	if got := sched.Get("parameters.required").Raw; !strings.Contains(got, `"publish_on"`) {
		t.Errorf("required_for_agents not applied: required = %s", got)
	}
	if got := sched.Get("parameters.properties.publish_on.type").Raw; strings.Contains(got, "null") {
		t.Errorf("required_for_agents field still nullable: %s", got)
	}
	if got := gjson.GetBytes(up, `tools.1.function.description`).String(); !strings.Contains(got, "call it with what you know") {
		t.Errorf("ask hint missing: %q", got)
	}
	if got := gjson.GetBytes(up, `tools.2`).Raw; got != `{"type":"function","function":{"name":"lookup_thing","description":"Not ours.","parameters":{"type":"object"}}}` {
		t.Errorf("a tool the policy does not declare changed: %s", got)
	}
	// A model call that leaves the required-for-agents field out is refused
	// (schedule_post does not ask): the model hears it at once.
	res, _ := e.refusedWith(t, "ana", "call_s", call{"call_s", "schedule_post", `{"post":7}`, false})
	if !strings.Contains(res, "publish_on") {
		t.Errorf("refusal = %q", res)
	}
}

func TestFormChoicesAndDefaultsFromTheApp(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.app.SetRecord("/members", `[{"value":"ana","label":"Ana Alves"},{"value":"bo","label":"Bo Berg"}]`)
	e.app.SetRecord("/me/city", `{"value":"Lisbon"}`)
	l, _ := e.hold(t, "ana", call{"call_as", "assign_post", `{"post":7}`, false})
	form := gjson.GetBytes(e.rawView(ana, l, ""), "holds.0.form.requestedSchema.properties")
	if got := form.Get("owner.oneOf.#.title").Raw; got != `["Ana Alves","Bo Berg"]` {
		t.Errorf("owner choices = %s (%s)", got, form.Raw)
	}
	if got := form.Get("city.default").String(); got != "Lisbon" {
		t.Errorf("city default = %q", got)
	}
	for _, r := range e.app.Reads() {
		if r.Header.Get("X-Toolgate-Person") != "ana" || r.SignatureErr != nil {
			t.Errorf("choices read as %q (signature %v)", r.Header.Get("X-Toolgate-Person"), r.SignatureErr)
		}
	}
	// The choices of the status field come from the policy, in order.
	l2, _ := e.hold(t, "ana", draftTitleOnly)
	status := gjson.GetBytes(e.rawView(ana, l2, ""), "holds.0.form.requestedSchema.properties.status")
	if got := status.Get("oneOf.#.const").Raw; got != `["draft","published"]` {
		t.Errorf("status choices = %s", status.Raw)
	}
	if got := status.Get("oneOf.#.title").Raw; got != `["Draft","Published"]` {
		t.Errorf("status labels = %s", status.Raw)
	}
}

func TestRunTimePolicyMistakeRefuses(t *testing.T) {
	e := newEnv(t, envOptions{})
	// note_later has no schema in the policy; its ask says textarea on n,
	// which the request's tools declare an integer: knowable only now.
	e.provider.Enqueue(testkit.Reply{Body: jsonCompletion("", call{"call_nl", "note_later", `{}`, false})}, testkit.Reply{Body: textCompletion("ok")})
	req := `{"model":"gpt-4o","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"note_later","parameters":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}}}]}`
	st, _, body := e.rawPost(t, "ana", req)
	if st != 200 || linkRe.Match(body) {
		t.Fatalf("a call with a broken ask was held: %d %s", st, body)
	}
	reqs := e.provider.Requests()
	if len(reqs) != 2 || !strings.Contains(toolResult(reqs[1], "call_nl"), "note_later") {
		t.Errorf("the refusal did not reach the model")
	}
	if n := len(e.app.Calls()); n != 0 {
		t.Error("it ran")
	}
}

func TestFormFromStream(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.provider.Enqueue(testkit.Reply{Events: streamEvents([]string{"Let me draft that."}, draftTitleOnly)})
	acc := streamWith(t, e.client("ana"), userAsks("draft"))
	msg := acc.Choices[0].Message
	if len(msg.ToolCalls) != 0 || acc.Choices[0].FinishReason != "stop" {
		t.Errorf("calls %v finish %q", msg.ToolCalls, acc.Choices[0].FinishReason)
	}
	l := link(t, msg.Content)
	if !strings.HasPrefix(msg.Content, "Let me draft that.") || !strings.Contains(msg.Content, "A few details for your post.") {
		t.Errorf("content = %q", msg.Content)
	}
	if got := gjson.GetBytes(e.rawView(ana, l, ""), "holds.0.form.requestedSchema.properties.title.default").String(); got != "Launch notes" {
		t.Errorf("title default = %q", got)
	}
}
