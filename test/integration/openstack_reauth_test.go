//go:build integration

package integration

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup"
	"github.com/ipsecgw/provider-ipsec/internal/controller/network"
)

// TestOpenStackReauth revokes the Keystone token that the provider's
// client cache holds for a ProviderConfig (DELETE /v3/auth/tokens with the
// token itself) while a Network MR is polled every second. Once Neutron
// refuses the token (401; its keystonemiddleware caches validated tokens
// for 10 s here), gophercloud logs in again once and repeats the request:
// the MR never leaves Synced=True, and the cache holds a new token.
func TestOpenStackReauth(t *testing.T) {
	e := startOpenStack(t)
	ctx := context.Background()
	// A client cache of the test's own, counting logins and 401 answers.
	var logins, unauthorized atomic.Int64
	clients := openstack.NewClients()
	clients.Transport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/auth/tokens") {
				logins.Add(1)
			}
			resp, err := rt.RoundTrip(r)
			if err == nil && resp.StatusCode == http.StatusUnauthorized {
				unauthorized.Add(1)
			}
			return resp, err
		})
	}
	startProvider(t, func(mgr ctrl.Manager, o controller.Options) error {
		return network.Kind.Setup(mgr, o, mrsetup.Dependencies{OpenStack: clients})
	})
	mr := importedNetwork("itest-reauth-net", e.Fixtures.TenantNet.ID)
	t.Cleanup(func() { forgetMRs(mr) })
	create(t, mr)
	waitReady(t, mr, func() xpv2.ConditionedStatus { return mr.Status.ConditionedStatus })

	pc := &v1alpha1.ProviderConfig{}
	if err := kube.Get(ctx, client.ObjectKey{Name: "openstack"}, pc); err != nil {
		t.Fatal(err)
	}
	// The provider's own client for the ProviderConfig, from the cache.
	sc, err := clients.Network(ctx, kube, pc)
	if err != nil {
		t.Fatal(err)
	}
	revoked := sc.Token()
	loginsBefore, unauthorizedBefore := logins.Load(), unauthorized.Load()
	if code := tokenRequest(t, http.MethodDelete, sc.IdentityEndpoint+"auth/tokens", revoked, revoked); code != http.StatusNoContent {
		t.Fatalf("revoking the provider's token: Keystone answered %d, want 204", code)
	}
	start := time.Now()

	notSynced := 0
	eventually(t, 60*time.Second, "the provider holds a new token", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(mr), mr); err != nil {
			return err
		}
		if s := mr.GetCondition(xpv2.TypeSynced); s.Status != corev1.ConditionTrue {
			notSynced++
			t.Logf("Synced=%s: %s", s.Status, s.Message)
		}
		if sc.Token() == revoked {
			return errors.New("still the revoked token")
		}
		return nil
	})
	t.Logf("revocation to re-authentication: %s", time.Since(start).Round(10*time.Millisecond))
	// A few more polls with the new token.
	time.Sleep(3 * time.Second)
	if err := kube.Get(ctx, client.ObjectKeyFromObject(mr), mr); err != nil {
		t.Fatal(err)
	}
	if s := mr.GetCondition(xpv2.TypeSynced); s.Status != corev1.ConditionTrue || notSynced > 0 {
		t.Errorf("Synced=%s now and not True in %d samples since the revocation, want True throughout", s.Status, notSynced)
	}
	if got := logins.Load() - loginsBefore; got != 1 {
		t.Errorf("%d logins to Keystone after the revocation, want exactly 1", got)
	}
	if unauthorized.Load() == unauthorizedBefore {
		t.Error("no 401 answer after the revocation: the re-authentication was not caused by Neutron refusing the token")
	}
	// The revocation was real: Neutron refuses the old token.
	if code := tokenRequest(t, http.MethodGet, sc.ResourceBase+"networks/"+e.Fixtures.TenantNet.ID, revoked, ""); code != http.StatusUnauthorized {
		t.Errorf("Neutron answered %d to the revoked token, want 401", code)
	}
}

// tokenRequest sends method url with X-Auth-Token token and, if set,
// X-Subject-Token subject, and returns the status code. It never prints
// the tokens.
func tokenRequest(t *testing.T, method, url, token, subject string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Auth-Token", token)
	if subject != "" {
		req.Header.Set("X-Subject-Token", subject)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
