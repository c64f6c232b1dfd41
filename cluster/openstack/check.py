#!/usr/bin/python3
"""Checks that a tenant can do in the local Neutron what the provider will do.

Usage: cluster/openstack/check.py [CLOUD...]   (default: tenant-a tenant-a-appcred)

For each cloud of $OS_STATE/clouds.yaml: authenticates, finds Neutron in the
service catalog, then creates a security group with a rule, a port on
tenant-net, a floating IP on ext-net associated with the port, adds and
removes an extra route on the router, and deletes everything again, printing
how long each call took. Exits non-zero on the first failure.
"""

import json
import os
import sys
import time

import yaml
from keystoneauth1 import loading, session

STATE = os.environ.get("OS_STATE") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", ".work", "openstack")


def connect(cloud):
    plugin = {"v3applicationcredential": "v3applicationcredential"}.get(
        cloud.get("auth_type"), "v3password")
    auth = loading.get_plugin_loader(plugin).load_from_options(**cloud["auth"])
    return session.Session(auth=auth)


def timed(what, fn, *args, **kwargs):
    t = time.monotonic()
    r = fn(*args, **kwargs)
    print("  %-38s %4d ms  HTTP %d" % (what, (time.monotonic() - t) * 1000, r.status_code))
    return r


def check(name, cloud, fx):
    print("cloud %s" % name)
    s = connect(cloud)
    s.get_token()
    net = s.get_endpoint(service_type="network", interface="public",
                         region_name=cloud["region_name"]).rstrip("/") + "/v2.0"
    print("  project %s, Neutron at %s" % (s.get_project_id(), net))
    assert s.get_project_id() == fx["project"]["id"], "token scoped to the wrong project"

    sg = timed("create security group", s.post, net + "/security-groups", json={
        "security_group": {"name": "check-sg"}}).json()["security_group"]
    timed("create security group rule", s.post, net + "/security-group-rules", json={
        "security_group_rule": {"security_group_id": sg["id"], "direction": "ingress",
                                "ethertype": "IPv4", "protocol": "udp",
                                "port_range_min": 500, "port_range_max": 500}})
    port = timed("create port", s.post, net + "/ports", json={"port": {
        "name": "check-port", "network_id": fx["tenant_net"]["id"],
        "security_groups": [sg["id"]]}}).json()["port"]
    fip = timed("allocate floating IP", s.post, net + "/floatingips", json={"floatingip": {
        "floating_network_id": fx["ext_net"]["id"]}}).json()["floatingip"]
    fip = timed("associate floating IP", s.put, net + "/floatingips/" + fip["id"], json={
        "floatingip": {"port_id": port["id"]}}).json()["floatingip"]
    assert fip["port_id"] == port["id"] and fip["fixed_ip_address"], fip
    print("  floating IP %s -> %s" % (fip["floating_ip_address"], fip["fixed_ip_address"]))
    route = {"destination": "192.0.2.0/24", "nexthop": port["fixed_ips"][0]["ip_address"]}
    router_url = net + "/routers/" + fx["router"]["id"]
    r = timed("add extra route", s.put, router_url + "/add_extraroutes",
              json={"router": {"routes": [route]}}).json()["router"]
    assert route in r["routes"], r
    r = timed("remove extra route", s.put, router_url + "/remove_extraroutes",
              json={"router": {"routes": [route]}}).json()["router"]
    assert route not in r["routes"], r
    timed("disassociate floating IP", s.put, net + "/floatingips/" + fip["id"],
          json={"floatingip": {"port_id": None}})
    timed("release floating IP", s.delete, net + "/floatingips/" + fip["id"])
    timed("delete port", s.delete, net + "/ports/" + port["id"])
    timed("delete security group", s.delete, net + "/security-groups/" + sg["id"])


def main():
    with open(os.path.join(STATE, "clouds.yaml")) as f:
        clouds = yaml.safe_load(f)["clouds"]
    with open(os.path.join(STATE, "fixtures.json")) as f:
        fx = json.load(f)
    for name in sys.argv[1:] or ["tenant-a", "tenant-a-appcred"]:
        check(name, clouds[name], fx)
    print("ok")


if __name__ == "__main__":
    main()
