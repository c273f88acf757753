package keys

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"
	"sigs.k8s.io/yaml"

	"github.com/llmgw/llmgw/api/v1alpha1"
)

// gatewayKeyCRD is the GatewayKey CRD the cluster is installed with, as the
// API server uses it: its structural schema (for pruning) and the OpenAPI
// validator built from it.
type gatewayKeyCRD struct {
	structural *structuralschema.Structural
	validator  *validate.SchemaValidator
}

var loadCRD = sync.OnceValues(func() (*gatewayKeyCRD, error) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", "llmgw.dev_gatewaykeys.yaml"))
	if err != nil {
		return nil, err
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(raw, &crd); err != nil {
		return nil, err
	}
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, &internal, nil); err != nil {
		return nil, err
	}
	structural, err := structuralschema.NewStructural(&internal)
	if err != nil {
		return nil, err
	}
	// The validator the API server's apiextensions validation builds, minus
	// CEL (whose libraries this module does not carry).
	validator := validate.NewSchemaValidator(structural.ToKubeOpenAPI(), nil, "", strfmt.Default)
	return &gatewayKeyCRD{structural: structural, validator: validator}, nil
})

// applyGatewayKey does to a printed document what the API server does to a
// custom resource on create, short of CEL rules and metadata checks (the
// controllers' envtest applies printed keys to a real API server): it reports
// every field the schema does not know (the server would silently drop it),
// validates against the schema (types, patterns, bounds, enums), and decodes
// what is left strictly into the API type, as the controller reads it.
// Schema defaults are not applied: printed keys spell every value out.
func applyGatewayKey(doc []byte) (v1alpha1.GatewayKey, []string, error) {
	crd, err := loadCRD()
	if err != nil {
		return v1alpha1.GatewayKey{}, nil, err
	}
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return v1alpha1.GatewayKey{}, nil, err
	}
	// The server's decoding: integers stay int64.
	var obj map[string]any
	if err := utiljson.Unmarshal(j, &obj); err != nil {
		return v1alpha1.GatewayKey{}, nil, err
	}
	var problems []string
	for _, p := range pruning.PruneWithOptions(obj, crd.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}) {
		problems = append(problems, "unknown field "+p)
	}
	for _, e := range crd.validator.Validate(obj).Errors {
		problems = append(problems, e.Error())
	}
	stored, err := json.Marshal(obj)
	if err != nil {
		return v1alpha1.GatewayKey{}, problems, err
	}
	var gk v1alpha1.GatewayKey
	dec := json.NewDecoder(strings.NewReader(string(stored)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&gk); err != nil {
		problems = append(problems, "decode into v1alpha1.GatewayKey: "+err.Error())
	}
	return gk, problems, nil
}

// TestApplyGatewayKeyRefuses: the emulated API server refuses what the real
// one does, so that a printed key it accepts is evidence.
func TestApplyGatewayKeyRefuses(t *testing.T) {
	const head = "apiVersion: llmgw.dev/v1alpha1\nkind: GatewayKey\nmetadata: {name: k}\nspec:\n  keyHash: sha256:" +
		"0000000000000000000000000000000000000000000000000000000000000000\n  keyPrefix: lgw_abcdefghij\n  models: ['*']\n"
	cases := []struct {
		name, spec, want string // want "" means accepted
	}{
		{"minimal", "", ""},
		{"budget without defaults", "  budget: {amount: '25'}\n", ""},
		{"all quotas", "  tokensPerMinute: 1000000000000\n  budget: {amount: '0.125', currency: EUR, period: day}\n  group: team-a.prod\n", ""},
		{"tpm zero", "  tokensPerMinute: 0\n", "spec.tokensPerMinute"},
		{"tpm above", "  tokensPerMinute: 1000000000001\n", "spec.tokensPerMinute"},
		{"amount sign", "  budget: {amount: '-1'}\n", "spec.budget.amount"},
		{"amount digits", "  budget: {amount: '1.1234567'}\n", "spec.budget.amount"},
		{"amount missing", "  budget: {period: day}\n", "spec.budget.amount"},
		{"currency", "  budget: {amount: '1', currency: usd}\n", "spec.budget.currency"},
		{"period", "  budget: {amount: '1', period: week}\n", "spec.budget.period"},
		{"group", "  group: Team_A\n", "spec.group"},
		{"unknown field", "  budgetAmount: '5'\n", "unknown field spec.budgetAmount"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, problems, err := applyGatewayKey([]byte(head + c.spec))
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(problems, "\n")
			switch {
			case c.want == "" && got != "":
				t.Fatalf("refused:\n%s", got)
			case c.want != "" && !strings.Contains(got, c.want):
				t.Fatalf("problems %q, want one about %s", got, c.want)
			}
		})
	}
}
