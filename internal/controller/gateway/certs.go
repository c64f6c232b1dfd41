package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/render"
)

// tunnelCert reads and checks the certificate, key and peer CAs of
// certificate tunnel t of a Gateway whose objects are in namespace ns.
// Errors name the tunnel, the Secret or ConfigMap, the key and the fix, and
// never carry a key's contents.
func tunnelCert(ctx context.Context, c client.Reader, ns string, t v1alpha1.Tunnel, now time.Time) (*render.TunnelCert, error) {
	ca := t.Certificate
	path := fmt.Sprintf("tunnels[%s].certificate", t.Name)
	s := &corev1.Secret{}
	nn := types.NamespacedName{Namespace: ns, Name: ca.SecretName}
	if err := c.Get(ctx, nn, s); err != nil {
		if kerrors.IsNotFound(err) {
			return nil, fmt.Errorf("%s.secretName: Secret %s does not exist: create it (a cert-manager Certificate with this secretName does) or fix secretName", path, nn)
		}
		return nil, fmt.Errorf("%s.secretName: cannot get Secret %s: %w", path, nn, err)
	}
	if s.Type != corev1.SecretTypeTLS {
		return nil, fmt.Errorf("%s.secretName: Secret %s is of type %q, not %s: create it with kubectl create secret tls, or let cert-manager write it", path, nn, s.Type, corev1.SecretTypeTLS)
	}
	caData, caWhere, err := peerCA(ctx, c, ns, ca.PeerCA)
	if err != nil {
		return nil, fmt.Errorf("%s.peerCA: %w", path, err)
	}
	caKey := ca.PeerCA.Key
	if caKey == "" {
		caKey = v1alpha1.DefaultCAKey
	}
	tc, err := render.ParseTunnelCert(s.Data[render.KeyTLSCert], s.Data[render.KeyTLSKey], caData, caKey, now)
	var ce *render.CertError
	switch {
	case errors.As(err, &ce) && ce.Key == caKey:
		return nil, fmt.Errorf("%s.peerCA: %s %w", path, caWhere, err)
	case err != nil:
		return nil, fmt.Errorf("%s.secretName: Secret %s %w", path, nn, err)
	}
	return tc, nil
}

// peerCA returns the CA certificates ref names and what holds them, for
// messages.
func peerCA(ctx context.Context, c client.Reader, ns string, ref v1alpha1.CARef) ([]byte, string, error) {
	key := ref.Key
	if key == "" {
		key = v1alpha1.DefaultCAKey
	}
	var data map[string][]byte
	var where string
	switch {
	case ref.SecretName != nil:
		nn := types.NamespacedName{Namespace: ns, Name: *ref.SecretName}
		where = "Secret " + nn.String()
		s := &corev1.Secret{}
		if err := c.Get(ctx, nn, s); err != nil {
			return nil, where, missing(err, where)
		}
		data = s.Data
	case ref.ConfigMapName != nil:
		nn := types.NamespacedName{Namespace: ns, Name: *ref.ConfigMapName}
		where = "ConfigMap " + nn.String()
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, nn, cm); err != nil {
			return nil, where, missing(err, where)
		}
		data = map[string][]byte{}
		for k, v := range cm.Data {
			data[k] = []byte(v)
		}
		for k, v := range cm.BinaryData {
			data[k] = v
		}
	default:
		return nil, "", errors.New("give secretName or configMapName")
	}
	v, ok := data[key]
	if ok && len(v) == 0 {
		return nil, where, fmt.Errorf("%s has the key %q for the CA certificates that sign the peer's certificate, but its value is empty: write them into it (PEM) or fix peerCA.key", where, key)
	}
	if !ok {
		return nil, where, fmt.Errorf("%s has no key %q with the CA certificates that sign the peer's certificate: add it (PEM) or fix peerCA.key", where, key)
	}
	return v, where, nil
}

// missing describes a failed read of where.
func missing(err error, where string) error {
	if kerrors.IsNotFound(err) {
		return fmt.Errorf("%s does not exist: create it with the peer's CA certificates or fix the name", where)
	}
	return fmt.Errorf("cannot get %s: %w", where, err)
}
