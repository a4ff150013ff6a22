package gemini

import (
	"testing"

	"github.com/toolgate/toolgate/interceptor/sse"
)

func TestAppendEvent(t *testing.T) {
	if got := string(AppendEvent(nil, []byte(`{"a":`+"\n"+`1}`), "\r\n")); got != "data: {\"a\": 1}\r\n\r\n" {
		t.Fatalf("%q", got)
	}
	evs := sse.Parse(AppendEvent(nil, []byte(`{"t":"x\ny"}`), "\n"))
	if len(evs) != 1 || evs[0].Data != `{"t":"x\ny"}` {
		t.Fatalf("%+v", evs)
	}
	if EOL([]byte("data: {}\r\n\r\n")) != "\r\n" || EOL([]byte("data: {}\n\n")) != "\n" {
		t.Fatal("EOL")
	}
	if string(KeepAlive(SSE, "\r\n")) != "\r\n\r\n" || string(KeepAlive(JSONArray, "")) != "\n" {
		t.Fatal("KeepAlive")
	}
}
