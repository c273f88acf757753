// Package specs holds what the two e2e suites check the same way: the envtest
// suite (test/e2e: controller and gateway in process against a real API
// server) and the kind suite (test/e2e/kind: the deployed system, driven with
// kubectl and the official SDKs through port-forwards).
//
//   - Contract: the client-facing seed contract as ginkgo specs (models per
//     key, 401/403, JSON and SSE chat through the SDK, exactly one
//     `data: [DONE]`, fallback rules counted on the mocks, per-key rate-limit
//     isolation, exactly one usage record per request through every replica);
//   - Agents: agents' traffic through both protocols (tool conversations,
//     a tool-call stream cut after its first delta, an image, json_schema,
//     embeddings) with one record each;
//   - Endpoints: /v1/messages through the Anthropic Go SDK and /v1/responses
//     through openai-go's Responses client (text, streams, a tool
//     conversation, an image, a budget 429 in each API's shape, fallback
//     across protocols, an error after the commit point), with one record
//     each, found by endpoint and session;
//   - StartLoad: a paced load with status accounting;
//   - MeasureHotLoad: the hot-load latency of N changes over every replica,
//     with p50/p99;
//   - chat, raw SSE, usage and mock-counter helpers the specs are made of.
//
// Nothing here prints a key: failure messages name keys by their role.
package specs
