package provider_test

// Runners of each adapter for the tests that table over every adapter alike
// (keys_test.go, scan_test.go, types_test.go, providers_test.go), copied
// from each adapter's own tests (a protocol's test package may not import
// its adapter). The builders and readers of each protocol's answers are
// its test package's: chattest, anthropictest, responsestest.

import (
	"bytes"
	"context"

	"github.com/toolgate/toolgate/provider"
	anthropicadapter "github.com/toolgate/toolgate/provider/anthropic"
	"github.com/toolgate/toolgate/provider/chat"
	"github.com/toolgate/toolgate/provider/providertest"
	responsesadapter "github.com/toolgate/toolgate/provider/responses"
)

const waitText = providertest.WaitText

func rewriteStream(in []byte, h provider.Holder, sizes ...int) (out []byte, flushes int, err error) {
	var buf bytes.Buffer
	s := chat.Chat{}.NewStream(context.Background(), &buf, func() error { flushes++; return nil }, h)
	for i := 0; len(in) > 0; i++ {
		n := len(in)
		if len(sizes) > 0 {
			n = min(sizes[i%len(sizes)], len(in))
		}
		if _, err = s.Write(in[:n]); err != nil {
			break
		}
		in = in[n:]
	}
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	return buf.Bytes(), flushes, err
}

// anthRewrite runs in through an Anthropic stream, written in pieces of
// the given sizes (cycled; all at once if none), and returns what came out.
func anthRewrite(in []byte, h provider.Holder, sizes ...int) (out []byte, flushes int, err error) {
	var buf bytes.Buffer
	s := anthropicadapter.Anthropic{}.NewStream(context.Background(), &buf, func() error { flushes++; return nil }, h)
	for i := 0; len(in) > 0; i++ {
		n := len(in)
		if len(sizes) > 0 {
			n = min(sizes[i%len(sizes)], len(in))
		}
		if _, err = s.Write(in[:n]); err != nil {
			break
		}
		in = in[n:]
	}
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	return buf.Bytes(), flushes, err
}

// respRewrite runs in through a Responses stream, written in pieces of the
// given sizes (cycled; all at once if none), and returns what came out.
func respRewrite(in []byte, h provider.Holder, sizes ...int) (out []byte, err error) {
	var buf bytes.Buffer
	s := responsesadapter.Responses{}.NewStream(context.Background(), &buf, func() error { return nil }, h)
	for i := 0; len(in) > 0; i++ {
		n := len(in)
		if len(sizes) > 0 {
			n = min(sizes[i%len(sizes)], len(in))
		}
		if _, err = s.Write(in[:n]); err != nil {
			break
		}
		in = in[n:]
	}
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	return buf.Bytes(), err
}
