package openai

import "github.com/go-json-experiment/json/jsontext"

// Object types of the embeddings answer.
const (
	ObjectList      = "list"
	ObjectEmbedding = "embedding"
)

// EmbeddingRequest is the body of POST /v1/embeddings. Input is a string,
// an array of strings, an array of tokens (integers) or an array of such
// arrays, kept raw.
type EmbeddingRequest struct {
	Model          string         `json:"model"`
	Input          jsontext.Value `json:"input"`
	Dimensions     *int           `json:"dimensions,omitzero"`
	EncodingFormat string         `json:"encoding_format,omitzero"` // float (the default) or base64
	User           *string        `json:"user,omitzero"`
}

// Embedding encodings.
const (
	EncodingFloat  = "float"
	EncodingBase64 = "base64"
)

// EmbeddingResponse is the answer of POST /v1/embeddings.
type EmbeddingResponse struct {
	Object string          `json:"object"` // ObjectList
	Data   []Embedding     `json:"data"`
	Model  string          `json:"model"`
	Usage  *EmbeddingUsage `json:"usage,omitzero"`
}

// Embedding is one input's vector: an array of numbers, or with
// encoding_format base64 a string of little-endian float32s, kept raw.
type Embedding struct {
	Object    string         `json:"object"` // ObjectEmbedding
	Index     int            `json:"index"`
	Embedding jsontext.Value `json:"embedding"`
}

// EmbeddingUsage counts an embeddings request's input tokens.
type EmbeddingUsage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}
