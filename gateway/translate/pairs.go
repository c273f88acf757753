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

// Messages is the translator from Anthropic Messages to protocol; nil for
// an unknown protocol.
func Messages(protocol string) ChatPair {
	switch protocol {
	case ProtocolAnthropic:
		return anthropicToAnthropic{}
	case ProtocolOpenAI:
		return anthropicToOpenAI{}
	}
	return nil
}

// Responses is the translator from the Responses API to a provider of
// protocol; responsesAPI: the provider serves the Responses API itself
// (pass-through), else its chat endpoint (translation). nil for an unknown
// protocol. A translating pair is made for one request: Request records
// what its answer echoes and which tools are custom ones, and Answer and
// Stream read it, so call Responses anew for each request.
func Responses(protocol string, responsesAPI bool) ChatPair {
	switch {
	case protocol == ProtocolOpenAI && responsesAPI:
		return responsesResponses{}
	case protocol == ProtocolOpenAI:
		return &responsesToOpenAI{}
	case protocol == ProtocolAnthropic:
		return &responsesToAnthropic{}
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
