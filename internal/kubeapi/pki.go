package kubeapi

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
)

// writeServiceAccountKey writes a fresh RSA key pair for signing and checking
// ServiceAccount tokens, which the TokenRequest API needs.
func writeServiceAccountKey(keyPath, pubPath string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("generate service account key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return fmt.Errorf("marshal service account public key: %w", err)
	}
	if err := writePEM(keyPath, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key)); err != nil {
		return err
	}
	return writePEM(pubPath, "PUBLIC KEY", pub)
}

// writePEM writes one PEM block, readable only by us like any key.
func writePEM(path, typ string, der []byte) error {
	data := pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", typ, err)
	}
	return nil
}

// newToken returns a random bearer token.
func newToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // never fails, per its documentation
	return hex.EncodeToString(b)
}

// writeTokenFile writes the static token file with the one admin user. Group
// system:masters passes every authorizer, RBAC included.
func writeTokenFile(path, token string) error {
	line := token + `,admin,admin,"system:masters"` + "\n"
	if err := os.WriteFile(path, []byte(line), 0o600); err != nil {
		return fmt.Errorf("write token file: %w", err)
	}
	return nil
}

// errNoCA means the serving certificate file held no certificate.
var errNoCA = errors.New("no certificate in the API server's serving certificate file")

// readServingCA returns, as PEM, the CA that kube-apiserver generated with its
// self-signed serving certificate in --cert-dir: it writes the chain,
// serving certificate then CA, to apiserver.crt. If the file has no CA the
// whole chain is trusted, which still verifies the serving certificate.
func readServingCA(certFile string) ([]byte, error) {
	data, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("read serving certificate: %w", err)
	}
	var cas []byte
	found := false
	for block, rest := pem.Decode(data); block != nil; block, rest = pem.Decode(rest) {
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse serving certificate: %w", err)
		}
		found = true
		if cert.IsCA {
			cas = append(cas, pem.EncodeToMemory(block)...)
		}
	}
	switch {
	case len(cas) > 0:
		return cas, nil
	case found:
		return data, nil
	default:
		return nil, errNoCA
	}
}
