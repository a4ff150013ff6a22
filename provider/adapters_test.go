package provider_test

// Runners of each adapter for the tests that table over every adapter alike
// (keys_test.go, scan_test.go, types_test.go, providers_test.go), copied
// from each adapter's own tests (a protocol's test package may not import
// its adapter). The builders and readers of each protocol's answers are
// its test package's: chattest, anthropictest, responsestest.

import (
	"context"
	"io"

	"github.com/toolgate/toolgate/provider"
	anthropicadapter "github.com/toolgate/toolgate/provider/anthropic"
	"github.com/toolgate/toolgate/provider/chat"
	"github.com/toolgate/toolgate/provider/providertest"
	responsesadapter "github.com/toolgate/toolgate/provider/responses"
)

const waitText = providertest.WaitText

func rewriteStream(in []byte, h provider.Holder, sizes ...int) (out []byte, flushes int, err error) {
	return providertest.Rewrite(func(dst io.Writer, flush func() error) provider.Stream {
		return chat.Chat{}.NewStream(context.Background(), dst, flush, h)
	}, in, sizes...)
}

// anthRewrite runs in through an Anthropic stream, written in pieces of
// the given sizes (cycled; all at once if none), and returns what came out.
func anthRewrite(in []byte, h provider.Holder, sizes ...int) (out []byte, flushes int, err error) {
	return providertest.Rewrite(func(dst io.Writer, flush func() error) provider.Stream {
		return anthropicadapter.Anthropic{}.NewStream(context.Background(), dst, flush, h)
	}, in, sizes...)
}

// respRewrite runs in through a Responses stream, written in pieces of the
// given sizes (cycled; all at once if none), and returns what came out.
func respRewrite(in []byte, h provider.Holder, sizes ...int) (out []byte, err error) {
	out, _, err = providertest.Rewrite(func(dst io.Writer, flush func() error) provider.Stream {
		return responsesadapter.Responses{}.NewStream(context.Background(), dst, flush, h)
	}, in, sizes...)
	return out, err
}
