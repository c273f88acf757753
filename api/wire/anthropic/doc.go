// Package anthropic declares the wire shapes of Anthropic's Messages
// protocol (POST /v1/messages): the request, the message answer, the stream
// events and the error envelope.
//
// It is the one declaration of these shapes, shared by the gateway (which
// sends requests to and reads answers from providers in them), the mock
// providers and the tests. It imports only the standard library and the JSON
// codec (github.com/go-json-experiment/json and its jsontext); encode and
// decode with that codec, which writes members in declaration order.
//
// Only what the gateway speaks today is declared; content is kept as raw
// JSON (jsontext.Value), so that extensions (tools, content blocks of other
// types) land here.
package anthropic
