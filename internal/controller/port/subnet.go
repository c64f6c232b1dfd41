package port

import (
	"context"
	"fmt"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
)

// subnetDetails fills SubnetCIDR and GatewayIP of each fixed IP in obs. It
// takes them from saved, the fixed IPs in status from an earlier Observe,
// when that has them for the same subnet, and otherwise reads the subnet
// with one GET /v2.0/subnets/{id} (Networking API v2, "Show subnet
// details"). An up-to-date port therefore costs no request beyond its own
// GET; a subnet's CIDR cannot change in Neutron, and a changed gateway_ip
// is seen when the port moves to another subnet or status is cleared.
// Errors name the Port, the subnet and the fixed IP.
func (e *external) subnetDetails(ctx context.Context, mg *v1alpha1.Port, saved, obs []v1alpha1.ObservedFixedIP) error {
	known := map[string]v1alpha1.ObservedFixedIP{}
	for _, s := range saved {
		if s.SubnetCIDR != "" {
			known[s.SubnetID] = s
		}
	}
	for i := range obs {
		k, ok := known[obs[i].SubnetID]
		if !ok {
			sn, err := subnets.Get(ctx, e.network, obs[i].SubnetID).Extract()
			if err != nil {
				return openstack.Wrap(err, fmt.Sprintf(errSubnet, mg.GetName(), obs[i].SubnetID, obs[i].IPAddress))
			}
			k = v1alpha1.ObservedFixedIP{SubnetCIDR: sn.CIDR, GatewayIP: sn.GatewayIP}
			known[obs[i].SubnetID] = k
		}
		obs[i].SubnetCIDR, obs[i].GatewayIP = k.SubnetCIDR, k.GatewayIP
	}
	return nil
}
