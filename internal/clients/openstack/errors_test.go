package openstack

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gophercloud/gophercloud/v2"
)

func unexpected(code int, body string) error {
	return gophercloud.ErrUnexpectedResponseCode{Actual: code, Body: []byte(body), Method: "PUT", URL: "http://127.0.0.1:9696/v2.0/floatingips/x"}
}

func TestWrap(t *testing.T) {
	cases := map[string]struct {
		reason    string
		err       error
		want      string
		retryable bool
		notFound  bool
	}{
		"NeutronError": {
			reason:    "Neutron's own type and message replace gophercloud's generic text.",
			err:       unexpected(409, `{"NeutronError": {"type": "IpAddressAlreadyAllocated", "message": "IP address 10.20.0.10 already allocated in subnet s", "detail": ""}}`),
			want:      "cannot create port: Neutron 409 IpAddressAlreadyAllocated: IP address 10.20.0.10 already allocated in subnet s",
			retryable: true,
		},
		"StaleRevision": {
			reason:    "A stale revision_number is a 412 worth retrying after a fresh read.",
			err:       unexpected(412, `{"NeutronError": {"type": "RevisionNumberConstraintFailed", "message": "Constrained to 3, but current revision is 4", "detail": ""}}`),
			want:      "cannot create port: Neutron 412 RevisionNumberConstraintFailed: Constrained to 3, but current revision is 4",
			retryable: true,
		},
		"NotFound": {
			reason:   "A 404 is recognised as not found.",
			err:      fmt.Errorf("get: %w", unexpected(404, `{"NeutronError": {"type": "PortNotFound", "message": "Port p could not be found.", "detail": ""}}`)),
			want:     "cannot create port: Neutron 404 PortNotFound: Port p could not be found.",
			notFound: true,
		},
		"NotNeutron": {
			reason:    "A body that is not Neutron's gives the HTTP status text.",
			err:       unexpected(503, "<html>busy</html>"),
			want:      "cannot create port: OpenStack API returned 503: Service Unavailable",
			retryable: true,
		},
		"Policy": {
			reason: "A policy refusal is not retried.",
			err:    unexpected(403, `{"NeutronError": {"type": "PolicyNotAuthorized", "message": "rule:create_port is disallowed by policy", "detail": ""}}`),
			want:   "cannot create port: Neutron 403 PolicyNotAuthorized: rule:create_port is disallowed by policy",
		},
		"Keystone": {
			reason: "Keystone's error body gives its title and message.",
			err:    unexpected(401, `{"error":{"code":401,"message":"The request you have made requires authentication.","title":"Unauthorized"}}`),
			want:   "cannot create port: Keystone 401 Unauthorized: The request you have made requires authentication.",
		},
		"NoResponse": {
			reason: "An error without a response is wrapped as it is.",
			err:    errors.New("dial tcp 127.0.0.1:9696: connection refused"),
			want:   "cannot create port: dial tcp 127.0.0.1:9696: connection refused",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Wrap(tc.err, "cannot create port")
			if diff := cmp.Diff(tc.want, got.Error()); diff != "" {
				t.Errorf("%s\nWrap(): -want, +got:\n%s", tc.reason, diff)
			}
			a, ok := AsAPIError(got)
			if r := ok && a.Retryable(); r != tc.retryable {
				t.Errorf("%s\nRetryable() = %v, want %v", tc.reason, r, tc.retryable)
			}
			if nf := IsNotFound(tc.err); nf != tc.notFound {
				t.Errorf("%s\nIsNotFound() = %v, want %v", tc.reason, nf, tc.notFound)
			}
		})
	}
}
