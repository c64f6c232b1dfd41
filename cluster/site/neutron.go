package main

import (
	"context"
	"fmt"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/config"
	"github.com/gophercloud/gophercloud/v2/openstack/config/clouds"
)

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
