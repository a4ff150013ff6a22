// Package chat is the OpenAI Chat Completions wire protocol (and every
// OpenAI-compatible API that speaks it, Gemini's included): the paths it
// serves and the endpoints around the gate, finding tool calls in a
// chat.completion and in chat.completion.chunk streams, taking the held
// ones out with the waiting text in their place, refused calls going back
// to the model in a continuation, and history restored in the next
// request. It registers its provider.Provider ("openai-chat") from init,
// as Caddy's encode/gzip does; the rest of the code knows it only through
// that interface.
package chat
