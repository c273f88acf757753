package manifests

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The Prometheus Operator kinds the chart renders (monitoring.coreos.com/v1),
// only the fields the chart sets, named as in the operator's API
// (github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1),
// which is not a dependency of this module. decode reads them strictly, so a
// misspelled or unexpected field in the chart fails the test.

type serviceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector          metav1.LabelSelector `json:"selector"`
		NamespaceSelector struct {
			Any        bool     `json:"any,omitempty"`
			MatchNames []string `json:"matchNames,omitempty"`
		} `json:"namespaceSelector"`
		Endpoints []smEndpoint `json:"endpoints"`
	} `json:"spec"`
}

type smEndpoint struct {
	Port          string `json:"port"`
	Path          string `json:"path"`
	Scheme        string `json:"scheme"`
	Interval      string `json:"interval"`
	ScrapeTimeout string `json:"scrapeTimeout"`
	Authorization *struct {
		Type        string                    `json:"type"`
		Credentials *corev1.SecretKeySelector `json:"credentials"`
	} `json:"authorization,omitempty"`
	TLSConfig *struct {
		InsecureSkipVerify bool `json:"insecureSkipVerify"`
	} `json:"tlsConfig,omitempty"`
}

type prometheusRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              ruleFile `json:"spec"`
}

// ruleFile is also the format of a Prometheus rule file (promtool check rules).
type ruleFile struct {
	Groups []ruleGroup `json:"groups"`
}

type ruleGroup struct {
	Name  string `json:"name"`
	Rules []rule `json:"rules"`
}

type rule struct {
	Alert       string            `json:"alert,omitempty"`
	Record      string            `json:"record,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}
