package translate

// Provider protocols, as a ProviderEndpoint names them.
const (
	ProtocolOpenAI    = "openai"
	ProtocolAnthropic = "anthropic"
)

// Chat is the translator from chat-completions to protocol; nil for an
// unknown protocol.
func Chat(protocol string) ChatPair {
	switch protocol {
	case ProtocolOpenAI:
		return openAIToOpenAI{}
	case ProtocolAnthropic:
		return openAIToAnthropic()
	}
	return nil
}

// Embeddings is the translator from embeddings to protocol; nil for an
// unknown protocol.
func Embeddings(protocol string) EmbeddingPair {
	switch protocol {
	case ProtocolOpenAI:
		return openAIEmbeddings{}
	case ProtocolAnthropic:
		return noEmbeddings{"Anthropic Messages"}
	}
	return nil
}
