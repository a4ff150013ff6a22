package chat

import "testing"

func TestMayHoldSeesEveryReadersKey(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{``, false},
		{`{"choices":[{"delta":{"content":"x"}}]}`, false},
		{`{"finish_reason":null,"system_fingerprint":"fp"}`, false},
		{`{"tool_calls":[]}`, true},
		{`{"function_call":{}}`, true},
		{`{"Tool_Calls":[]}`, true},
		{`{"TOOL_CALLS":[]}`, true},
		{`{"\u0074ool_calls":[]}`, true},
		{`{"tool\u005Fcalls":[]}`, true},
		{`{"tool_callſ":[]}`, true},
		{`{"tool_call\u017f":[]}`, true},
		{`{"content":"a \"quoted\" word, \u00e9, \u003c, \n and \\u0074"}`, false},
		{`{"content":"\\"}`, false},
		{`{"content":"\u2028"}`, false},
		{`{"content":"\\\u0074"}`, true},
		{`{"tool_calls"`, true},
		{`tool_calls`, false},
	} {
		if got := (Chat{}).MayHoldCalls([]byte(tc.in)); got != tc.want {
			t.Errorf("(Chat{}).MayHoldCalls(%s) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
