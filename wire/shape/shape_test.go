package shape

import "testing"

func TestNamesFindWholeNames(t *testing.T) {
	n := NewNames([]string{"delete_post", "send-email"})
	for body, want := range map[string]string{
		`{"name":"delete_post"}`:                      "delete_post",
		`{"functionCall":{"name":"delete_post"`:       "delete_post",
		`default_api.delete_post(post=7)`:             "delete_post",
		`{"tool":"send-email"}`:                       "send-email",
		`delete_post`:                                 "delete_post",
		`{"name":"delete\u005fpost"}`:                 "an escaped name",
		`{"name":"undelete_post"}`:                    "",
		`{"name":"delete_posts"}`:                     "",
		`{"name":"delete_post-2"}`:                    "",
		`{"text":"caf\u00e9 delete-post send_email"}`: "",
		`{"name":"lookup_weather"}`:                   "",
	} {
		if got := n.Named([]byte(body)); got != want {
			t.Errorf("%s: named %q, want %q", body, got, want)
		}
	}
	if got := (*Names)(nil).Named([]byte(`"delete_post"`)); got != "" {
		t.Errorf("no gated tools: named %q", got)
	}
	if NewNames(nil) != nil {
		t.Error("no gated tools: want nil")
	}
}

// TestReadsOneShape: an answer is an adapter's own only under its answer
// key, an array, with no other provider's call key beside it, in any case.
func TestReadsOneShape(t *testing.T) {
	for body, want := range map[string]bool{
		`{"choices":[{"message":{}}]}`:                true,
		`{"CHOICES":[]}`:                              true,
		`{"choices":{}}`:                              false,
		`{"choices":[],"candidates":[]}`:              false,
		`{"choices":[],"Tool_Calls":[]}`:              false,
		`{"output":[]}`:                               false,
		`[{"choices":[]}]`:                            false,
		`{"id":"x","choices":[],"usage":{"total":1}}`: true,
		// Keys with escapes, which readsTop leaves to gjson's reading.
		`{"choices":[],"tool\u005fcalls":[]}`:     false,
		`{"\u0063hoices":[],"candidates":[]}`:     false,
		`{"\u0063hoices":[],"id":"x"}`:            true,
		`{"choices":[],"\u0063andidates":{}}`:     false,
		`{"choices":[],"ſ":1,"\u0074ool_use":[]}`: false,
	} {
		if got := Reads("choices", []byte(body)); got != want {
			t.Errorf("%s: Reads = %v, want %v", body, got, want)
		}
	}
}

// TestEventMarks: an event is marked with every protocol whose clients
// read it as theirs.
func TestEventMarks(t *testing.T) {
	for data, want := range map[string]int{
		`{"choices":[]}`: MarkChat,
		`{"type":"response.output_item.added","item":{}}`:   MarkResponses,
		`{"type":"content_block_start","content_block":{}}`: MarkAnthropic,
		`{"choices":[],"type":"message_start"}`:             MarkChat | MarkAnthropic,
		`{"candidates":[]}`:                                 MarkOther,
		`[1]`:                                               MarkOther,
		`{"text":"hi"}`:                                     0,
	} {
		if got := EventMarks([]byte(data)); got != want {
			t.Errorf("%s: marks %b, want %b", data, got, want)
		}
	}
}
