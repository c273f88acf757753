package snapshot

// Where the controller publishes the snapshot and the gateway reads it: one
// ConfigMap in the controller's namespace, the canonical encoding under one key.
const (
	DefaultConfigMapName = "llmgw-snapshot"
	ConfigMapKey         = "snapshot.json"
)
