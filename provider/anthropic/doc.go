// Package anthropic is the Anthropic Messages wire protocol: the paths it
// serves and the endpoints around the gate, finding tool_use blocks in a
// message and in its event stream, taking the held ones out with the
// waiting text in their place (thinking blocks and their signatures kept
// as a request must echo them), refused calls going back to the model in
// a continuation, and history restored in the next request. It registers
// its provider.Provider ("anthropic") from init, as Caddy's encode/gzip
// does; the rest of the code knows it only through that interface.
package anthropic
