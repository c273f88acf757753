// Package openai declares the wire shapes of OpenAI's chat-completions
// protocol (POST /v1/chat/completions): the request, the chat.completion
// answer, the chat.completion.chunk stream events and the error envelope;
// and of POST /v1/embeddings.
//
// It is the one declaration of these shapes, shared by the gateway (which
// reads client requests and writes answers in them, and sends provider
// requests and reads provider answers in them), the mock providers and the
// tests. It imports only the standard library and the JSON codec
// (github.com/go-json-experiment/json and its jsontext); encode and decode
// with that codec, which writes members in declaration order.
//
// What a translation to another protocol carries is declared; members no
// translation models are kept as raw JSON (jsontext.Value).
package openai
