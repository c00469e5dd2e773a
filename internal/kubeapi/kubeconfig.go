package kubeapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// KubeconfigForToken writes a kubeconfig that authenticates with token, for
// running something as another identity (a ServiceAccount with least
// privilege), and returns its path in WorkDir. The same token gives the same
// path.
func (c *Cluster) KubeconfigForToken(token string) (string, error) {
	sum := sha256.Sum256([]byte(token))
	path := filepath.Join(c.WorkDir, "kubeconfig-"+hex.EncodeToString(sum[:6]))
	if err := c.writeKubeconfig(path, token); err != nil {
		return "", err
	}
	return path, nil
}

// writeKubeconfig writes a kubeconfig for token that trusts the serving CA
// (no insecure-skip-tls-verify), readable only by us since it holds a token.
func (c *Cluster) writeKubeconfig(path, token string) error {
	const name = "kubeapi"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthorityData: c.caData}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	// clientcmd.WriteToFile creates files with mode 0600.
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	return nil
}

// ServiceAccountToken returns a token for ServiceAccount ns/name from the
// TokenRequest API, valid for an hour with the API server's default audience.
// The ServiceAccount must exist.
func (c *Cluster) ServiceAccountToken(ctx context.Context, ns, name string) (string, error) {
	req := &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))},
	}
	resp, err := c.client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, req, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("request token for service account %s/%s: %w", ns, name, err)
	}
	return resp.Status.Token, nil
}
