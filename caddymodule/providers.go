package caddymodule

// The wire protocols the handler gates: each package registers its
// provider.Provider from init, and the handler finds them by name (the
// provider option) and by path. A new provider is a new package and one
// line here.
import (
	_ "github.com/toolgate/toolgate/provider/anthropic" // anthropic
	_ "github.com/toolgate/toolgate/provider/chat"      // openai-chat
	_ "github.com/toolgate/toolgate/provider/gemini"    // gemini
	_ "github.com/toolgate/toolgate/provider/responses" // openai-responses
)
