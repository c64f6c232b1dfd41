package main

import (
	"context"
	"fmt"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/config"
	"github.com/gophercloud/gophercloud/v2/openstack/config/clouds"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"

	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// newNeutron returns a function listing the associated floating IPs of
// Neutron, as mappings keyed by floating IP address, with the credentials
// of cloud in the clouds.yaml at path.
func newNeutron(ctx context.Context, path, cloud string) (func(context.Context) (map[string]topology.Mapping, error), error) {
	client, err := networkClient(ctx, path, cloud)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) (map[string]topology.Mapping, error) {
		return associated(ctx, client)
	}, nil
}

// networkClient returns a Neutron client with the credentials of cloud in
// the clouds.yaml at path. It re-authenticates when its token expires.
func networkClient(ctx context.Context, path, cloud string) (*gophercloud.ServiceClient, error) {
	ao, eo, tlsConfig, err := clouds.Parse(clouds.WithLocations(path), clouds.WithCloudName(cloud))
	if err != nil {
		return nil, fmt.Errorf("cannot read cloud %s of %s: %w", cloud, path, err)
	}
	ao.AllowReauth = true
	pc, err := config.NewProviderClient(ctx, ao, config.WithTLSConfig(tlsConfig))
	if err != nil {
		return nil, fmt.Errorf("cannot authenticate: %w", err)
	}
	client, err := openstack.NewNetworkV2(pc, eo)
	if err != nil {
		return nil, fmt.Errorf("cannot find the network endpoint: %w", err)
	}
	return client, nil
}

// associated lists every floating IP and returns those associated with a
// port.
func associated(ctx context.Context, client *gophercloud.ServiceClient) (map[string]topology.Mapping, error) {
	pages, err := floatingips.List(client, floatingips.ListOpts{}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("cannot list floating IPs: %w", err)
	}
	all, err := floatingips.ExtractFloatingIPs(pages)
	if err != nil {
		return nil, fmt.Errorf("cannot read floating IPs: %w", err)
	}
	out := map[string]topology.Mapping{}
	for _, f := range all {
		if f.PortID != "" && f.FixedIP != "" {
			out[f.FloatingIP] = topology.Mapping{FixedIP: f.FixedIP, PortID: f.PortID}
		}
	}
	return out, nil
}
