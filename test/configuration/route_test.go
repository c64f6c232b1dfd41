//go:build integration

package configuration

import (
	"strings"
	"testing"
)

// TestValidateClaimRouteMode proves the XRD's route-mode rules with crank
// beta validate: a claim with a cloud VPN connection's two route-mode
// tunnels (0.0.0.0/0 selectors) in mode routed is valid although its
// remote selectors cover the tenant subnets (its routes do not); a route
// outside spec.routed.clientSubnets, a route over a tenant subnet and a
// route-mode tunnel in mode nat (the Gateway's rule, carried by the XRD)
// are refused, each with its message.
func TestValidateClaimRouteMode(t *testing.T) {
	cache := validateCache(t)
	cases := map[string]struct {
		reason string
		mod    func(spec map[string]any)
		want   string
	}{
		"ActiveBackup": {
			reason: "Two route-mode tunnels with identical 0.0.0.0/0 selectors, routes in clientSubnets: valid.",
			mod:    func(map[string]any) {},
		},
		"RouteOutsideClientSubnets": {
			reason: "The tenant's router would not send a route's replies to the gateway.",
			mod: func(spec map[string]any) {
				tunnels(spec)[1]["routes"] = []any{"172.31.0.0/16", "10.99.0.0/16"}
			},
			want: "a tunnel's route is in no spec.routed.clientSubnets entry",
		},
		"RouteOverTenantSubnet": {
			reason: "A route over a tenant subnet is refused.",
			mod: func(spec map[string]any) {
				spec["routed"].(map[string]any)["clientSubnets"] = []any{"172.31.0.0/16", "10.20.0.0/16"}
				tunnels(spec)[0]["routes"] = []any{"10.20.0.0/16"}
			},
			want: "a tunnel's route overlaps a tenantSubnets entry",
		},
		"ModeNAT": {
			reason: "Route mode in mode nat: the Gateway's rule, carried by the XRD.",
			mod: func(spec map[string]any) {
				spec["mode"] = "nat"
				delete(spec, "routed")
			},
			want: "a tunnel's mode route needs the gateway's mode routed",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			claim, spec := parseMinimalClaim(t)
			spec["mode"] = "routed"
			spec["routed"] = map[string]any{"routerId": "00000000-0000-4000-8000-000000000004", "clientSubnets": []any{"172.31.0.0/16"}}
			spec["tenantSubnets"] = []any{"10.20.0.0/24"}
			base := tunnels(spec)[0]
			var list []any
			for i, peer := range []string{"198.51.100.101", "198.51.100.102"} {
				tn := map[string]any{}
				for k, v := range base {
					tn[k] = v
				}
				tn["name"] = []string{"cloud-vpn-1", "cloud-vpn-2"}[i]
				tn["peer"] = map[string]any{"address": peer}
				tn["trafficSelectors"] = []any{map[string]any{"local": "0.0.0.0/0", "remote": "0.0.0.0/0"}}
				tn["mode"] = "route"
				tn["routes"] = []any{"172.31.0.0/16"}
				tn["routeMetric"] = 100 * (i + 1)
				list = append(list, tn)
			}
			spec["tunnels"] = list
			tc.mod(spec)
			out, err := validateClaim(t, cache, claim)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%s\ncrossplane beta validate: %v\n%s", tc.reason, err, out)
			case tc.want != "" && (err == nil || !strings.Contains(out, tc.want)):
				t.Errorf("%s\ncrossplane beta validate: %v\n%s\nwant refused with %q", tc.reason, err, out, tc.want)
			}
		})
	}
}

// tunnels is spec.tunnels as maps.
func tunnels(spec map[string]any) []map[string]any {
	var out []map[string]any
	for _, tn := range spec["tunnels"].([]any) {
		out = append(out, tn.(map[string]any))
	}
	return out
}
