package translate

import (
	"github.com/go-json-experiment/json"

	"github.com/llmgw/llmgw/api/wire/openai"
)

// openAIEmbeddings passes an embeddings request through to a provider of
// the OpenAI protocol: the body but for model, the answer but for model.
type openAIEmbeddings struct{}

func (openAIEmbeddings) Request(req *EmbeddingRequest, model string) ([][]byte, error) {
	o, err := memberSpans(req.Body, "model")
	if err != nil {
		return nil, err
	}
	return splice(req.Body, setMembers(o, memberValue{"model", quoted(model)})), nil
}

func (openAIEmbeddings) Answer(raw []byte, m *Meta) (*Answer, error) {
	a := &Answer{}
	sawData := false
	body, err := relayObject(make([]byte, 0, len(raw)+len(m.Alias)+1), raw, m.Alias, "malformed response JSON", func(mb *member) (bool, error) {
		switch mb.name {
		case "data":
			sawData = mb.value.Kind() == '['
		case "usage":
			if mb.value.Kind() != 'n' {
				var u openai.EmbeddingUsage
				if err := json.Unmarshal(mb.value, &u, lenient); err != nil {
					return false, malformed("malformed usage in the response")
				}
				a.Usage = &Usage{InputTokens: u.PromptTokens}
			}
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	if !sawData {
		return nil, malformed("response has no data array")
	}
	a.Body = append(body, '\n')
	return a, nil
}

// noEmbeddings is a provider protocol without embeddings.
type noEmbeddings struct{ protocol string }

func (n noEmbeddings) Request(*EmbeddingRequest, string) ([][]byte, error) {
	return nil, &NotCarried{Reason: "the " + n.protocol + " protocol has no embeddings endpoint"}
}

func (n noEmbeddings) Answer([]byte, *Meta) (*Answer, error) {
	return nil, malformed("the " + n.protocol + " protocol has no embeddings endpoint")
}
