package snapshot

// Where the controller publishes the snapshot and the gateway reads it: one
// ConfigMap in the controller's namespace, the canonical encoding under one key.
const (
	// DefaultNamespace is where the controller watches resources and writes
	// the snapshot unless told otherwise, and where the manifests install.
	DefaultNamespace     = "llmgw-system"
	DefaultConfigMapName = "llmgw-snapshot"
	ConfigMapKey         = "snapshot.json"
)
