// Package responses is the OpenAI Responses wire protocol: the paths it
// serves and the endpoints around the gate (stored responses, Realtime),
// finding function_call and custom_tool_call items in a response and in
// its event stream, taking the held ones out with one waiting message in
// their place, refused calls going back to the model in a continuation,
// and history restored in the next request, including the steps held in
// responses and conversations the provider keeps (provider.Kept,
// provider.StateRestorer). It registers its provider.Provider
// ("openai-responses") from init, as Caddy's encode/gzip does; the rest of
// the code knows it only through that interface.
package responses
