package neutronproxy

import (
	"context"
	"fmt"

	"github.com/gophercloud/gophercloud/v2"
	gopenstack "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/quotas"
)

// Quotas are counts of Neutron objects a project may have, by kind.
type Quotas struct {
	SecurityGroups     int
	SecurityGroupRules int
	Ports              int
	FloatingIPs        int
}

// RaiseQuotas adds more to project's Neutron quotas, as the cloud named
// admin of cloudsYAML (a clouds.yaml document; the cloud must be allowed to
// set quotas), as a platform team raises a tenant's quotas for what it
// runs: the lab's Neutron keeps Neutron's defaults (10 security groups,
// 100 rules, 50 ports, 50 floating IPs), which a test with more objects
// than that exceeds as a real cloud would. It returns the function that
// sets the quotas back to what they were (with a context of its own: a
// cleanup's).
func RaiseQuotas(ctx context.Context, cloudsYAML []byte, admin, project string, more Quotas) (restore func(context.Context) error, err error) {
	pc, err := Admin(ctx, cloudsYAML, admin)
	if err != nil {
		return nil, err
	}
	sc, err := gopenstack.NewNetworkV2(pc, gophercloud.EndpointOpts{})
	if err != nil {
		return nil, err
	}
	was, err := quotas.Get(ctx, sc, project).Extract()
	if err != nil {
		return nil, fmt.Errorf("cannot read the Neutron quotas of project %s: %w", project, err)
	}
	set := func(ctx context.Context, q Quotas) error {
		_, err := quotas.Update(ctx, sc, project, quotas.UpdateOpts{SecurityGroup: &q.SecurityGroups,
			SecurityGroupRule: &q.SecurityGroupRules, Port: &q.Ports, FloatingIP: &q.FloatingIPs}).Extract()
		if err != nil {
			return fmt.Errorf("cannot set the Neutron quotas of project %s: %w", project, err)
		}
		return nil
	}
	old := Quotas{SecurityGroups: was.SecurityGroup, SecurityGroupRules: was.SecurityGroupRule, Ports: was.Port, FloatingIPs: was.FloatingIP}
	if err := set(ctx, Quotas{SecurityGroups: plus(old.SecurityGroups, more.SecurityGroups),
		SecurityGroupRules: plus(old.SecurityGroupRules, more.SecurityGroupRules),
		Ports:              plus(old.Ports, more.Ports), FloatingIPs: plus(old.FloatingIPs, more.FloatingIPs)}); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error { return set(ctx, old) }, nil
}

// plus is quota q raised by n; Neutron's -1 (no limit) stays so.
func plus(q, n int) int {
	if q < 0 {
		return q
	}
	return q + n
}
