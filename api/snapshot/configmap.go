package snapshot

// Where the controller publishes the snapshot and the gateway reads it, in
// the controller's namespace. A snapshot travels as a head ConfigMap (the
// entry point, DefaultConfigMapName unless configured) naming its version and
// its parts, plus one immutable ConfigMap per part (shard.go). One
// ConfigMap cannot hold it: the API server refuses objects over 1 MiB, and
// 50,000 keys are about 18 MB of canonical JSON.
const (
	// DefaultNamespace is where the controller watches resources and writes
	// the snapshot unless told otherwise, and where the manifests install.
	DefaultNamespace     = "llmgw-system"
	DefaultConfigMapName = "llmgw-snapshot"

	// HeadKey is the head's data key: the Head, as JSON.
	HeadKey = "index.json"
	// ConfigMapKey is the data key of the ConfigMap a gateway is pointed at
	// (--configmap): the head's.
	ConfigMapKey = HeadKey
	// PartKey is a part's binaryData key: its JSON, gzip-compressed.
	PartKey = "part.json.gz"

	// SnapshotLabel is on the head and on every part, valued with the head's
	// name: the gateway's and the controller's label selector, so a
	// namespace can hold other ConfigMaps (and, in tests, several heads).
	SnapshotLabel = "llmgw.dev/snapshot"
	// ComponentLabel/ComponentValue also mark both, for people and tools.
	ComponentLabel = "app.kubernetes.io/component"
	ComponentValue = "snapshot"
	// VersionAnnotation on the head repeats the snapshot version, so that
	// `kubectl get -o yaml` shows it without decoding anything.
	VersionAnnotation = "llmgw.dev/snapshot-version"
	// PartHashAnnotation on a part is its content hash (PartRef.SHA256), so
	// the controller can check an existing part from its metadata alone.
	PartHashAnnotation = "llmgw.dev/part-sha256"
)

// Selector is the label selector that finds the head and the parts of the
// snapshot published under head.
func Selector(head string) string { return SnapshotLabel + "=" + head }
