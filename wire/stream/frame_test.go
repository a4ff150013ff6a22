package stream

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/wire/shape"
)

// upper is a Sink that passes events without "x" and writes the others'
// data in upper case.
type upper struct {
	Frame
	out bytes.Buffer
}

func (u *upper) Passes(ev []byte) bool { return !bytes.Contains(ev, []byte("x")) }

func (u *upper) Slow(ev []byte) {
	data, _ := u.Data(ev)
	u.WriteReplaced(ev, bytes.ToUpper(data), false)
}

func (u *upper) StopEvent(message string) []byte {
	return []byte("event: error\ndata: " + message + "\n\n")
}

var (
	errLarge  = errors.New("event too large")
	errClosed = errors.New("write after close")
)

func newUpper() *upper {
	u := &upper{}
	u.Attach(&u.out, nil, "test stream", u)
	return u
}

// TestFrameEveryWriteSplit: events come out whole and as the sink made
// them, however the body is cut into writes, and a passing stream byte for
// byte.
func TestFrameEveryWriteSplit(t *testing.T) {
	in := "id: 1\ndata: a\n\nevent: e\ndata: x1\ndata: x2\n\n: comment\n\ndata: b\n\n"
	want := "id: 1\ndata: a\n\nevent: e\ndata: X1\ndata: X2\n\n: comment\n\ndata: b\n\n"
	for cut := 0; cut <= len(in); cut++ {
		u := newUpper()
		for _, p := range []string{in[:cut], in[cut:]} {
			if _, err := u.WriteEvents(u, []byte(p), errLarge, errClosed); err != nil {
				t.Fatalf("cut %d: %v", cut, err)
			}
		}
		if midLine := u.CloseEvents(u); midLine || u.out.String() != want {
			t.Fatalf("cut %d: mid-line %v, got %q", cut, midLine, u.out.String())
		}
	}
}

// TestFrameEndings: a last event without its blank line is handled at
// Close and reported when it ends mid-line; an event over MaxEvent fails
// the stream with the stop event; a Write after MarkClosed fails.
func TestFrameEndings(t *testing.T) {
	u := newUpper()
	u.WriteEvents(u, []byte("data: x"), errLarge, errClosed)
	if midLine, wrote := u.CloseEventsKeep(u); !midLine || !wrote || u.out.String() != "data: X\n" {
		t.Fatalf("mid-line %v, wrote %v, got %q", midLine, wrote, u.out.String())
	}

	u = newUpper()
	if _, err := u.WriteEvents(u, []byte("data: "+strings.Repeat("a", MaxEvent)), errLarge, errClosed); !errors.Is(err, errLarge) {
		t.Fatalf("an event over MaxEvent: %v", err)
	}
	if got := u.out.String(); got != "event: error\ndata: "+StopMessage(errLarge)+"\n\n" {
		t.Fatalf("the stop event: got %q", got)
	}

	u = newUpper()
	if u.MarkClosed() || !u.MarkClosed() {
		t.Fatal("MarkClosed: want false, then true")
	}
	if _, err := u.WriteEvents(u, []byte("data: a\n\n"), errLarge, errClosed); !errors.Is(err, errClosed) {
		t.Fatalf("a write after close: %v", err)
	}
}

// TestFrameRefusesForeignEvents: with GuardWith, an event naming a gated
// tool that is not the stream's own fails the stream before it goes out;
// one that is its own goes through the sink.
func TestFrameRefusesForeignEvents(t *testing.T) {
	u := newUpper()
	u.GuardWith(shape.NewNames([]string{"gated"}), func(data []byte) bool { return bytes.HasPrefix(data, []byte("own")) })
	if _, err := u.WriteEvents(u, []byte("data: own gated\n\ndata: a\n\n"), errLarge, errClosed); err != nil {
		t.Fatal(err)
	}
	_, err := u.WriteEvents(u, []byte("data: b\n\ndata: other gated\n\ndata: c\n\n"), errLarge, errClosed)
	if !errors.Is(err, ErrNamesGated) {
		t.Fatalf("a foreign event: %v", err)
	}
	want := "data: own gated\n\ndata: a\n\ndata: b\n\nevent: error\ndata: " + StopMessage(ErrNamesGated) + "\n\n"
	if got := u.out.String(); got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}
