package source

import (
	"context"
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/llmgw/llmgw/api/snapshot"
)

// SecretCredentials resolves `credential.secretName/secretKey` references
// with a GET on the Secret in the gateway's namespace, at every snapshot
// apply and at every credential refresh (KubeConfig.CredentialRefresh): that
// periodic re-read, not a snapshot change, is how a rotated Secret reaches
// the gateway without a restart.
type SecretCredentials struct {
	Client    kubernetes.Interface
	Namespace string
}

// Resolve reads a provider credential from the Secret key ref names.
func (s SecretCredentials) Resolve(ctx context.Context, provider string, ref snapshot.Credential) (string, error) {
	if ref.SecretName == "" || ref.SecretKey == "" {
		return "", errors.New("kubernetes mode supports only secretName/secretKey credential references")
	}
	sec, err := s.Client.CoreV1().Secrets(s.Namespace).Get(ctx, ref.SecretName, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("provider %s: reading Secret %s: %w", provider, ref.SecretName, err)
	}
	v, ok := sec.Data[ref.SecretKey]
	if !ok {
		return "", fmt.Errorf("provider %s: Secret %s has no key %q", provider, ref.SecretName, ref.SecretKey)
	}
	secret := strings.TrimSpace(string(v))
	if secret == "" {
		return "", fmt.Errorf("provider %s: Secret %s key %q is empty", provider, ref.SecretName, ref.SecretKey)
	}
	return secret, nil
}
