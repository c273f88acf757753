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
// What a translation or a mock reads is declared; members only a provider
// reads are kept as raw JSON (jsontext.Value).
package anthropic
