#!/usr/bin/python3
"""The runbook's OpenStack side on the local Neutron, as `openstack` would do it.

    runbook.py vm-up              the hand-built VM gateway of the runbook: a
                                  port "vm-gateway" (10.20.0.5) on tenant-net
                                  holding floating IP 203.0.113.10, moved
                                  there from any other port; prints
                                  {"vm_port_id", "floating_ip", ...,
                                  "moved_from_port_id"} as JSON
    runbook.py unset FIP          floating ip unset --port (cutover/rollback)
    runbook.py set FIP PORT_ID    floating ip set --port (rollback)
    runbook.py show FIP           prints the port the floating IP is on, or
                                  "unassociated"
    runbook.py node-pairs PORT_ID by hand, what a cluster's operator (or the
                                  provider) must grant on a cloud with port
                                  security: the port's fixed IP and MAC as an
                                  allowed address pair of every node's port
                                  (ports node-*: cluster/site)

Reads $OS_STATE/clouds.yaml and fixtures.json (cluster/openstack/up.sh);
runs with Debian's python3 like fixtures.py. Only talks to the loopback
Keystone and Neutron named there.
"""

import json
import os
import sys

import yaml
from keystoneauth1 import session
from keystoneauth1.identity import v3

STATE = os.environ.get("OS_STATE") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", ".work", "openstack")
VM_FIXED_IP = "10.20.0.5"
VM_FLOATING_IP = "203.0.113.10"


def load():
    with open(os.path.join(STATE, "fixtures.json")) as f:
        fixtures = json.load(f)
    with open(fixtures["clouds_yaml"]) as f:
        clouds = yaml.safe_load(f)["clouds"]
    return fixtures, clouds


def sess(cloud):
    a = cloud["auth"]
    return session.Session(auth=v3.Password(
        auth_url=a["auth_url"], username=a["username"], password=a["password"],
        project_name=a["project_name"], user_domain_name=a["user_domain_name"],
        project_domain_name=a["project_domain_name"]))


def fip_by_address(s, net, address):
    found = s.get(net + "/floatingips", params={"floating_ip_address": address}).json()["floatingips"]
    if not found:
        sys.exit("floating IP %s does not exist in the project" % address)
    return found[0]


def vm_up(fixtures, tenant, admin, net):
    ports = tenant.get(net + "/ports", params={"name": "vm-gateway"}).json()["ports"]
    port = ports[0] if ports else tenant.post(net + "/ports", json={"port": {
        "name": "vm-gateway", "network_id": fixtures["tenant_net"]["id"],
        "description": "the hand-built VM gateway of the migration runbook",
        "fixed_ips": [{"subnet_id": fixtures["tenant_subnet"]["id"], "ip_address": VM_FIXED_IP}]}}).json()["port"]
    found = tenant.get(net + "/floatingips", params={"floating_ip_address": VM_FLOATING_IP}).json()["floatingips"]
    # Only an admin may choose a floating IP's address; the project owns it.
    fip = found[0] if found else admin.post(net + "/floatingips", json={"floatingip": {
        "floating_network_id": fixtures["ext_net"]["id"], "floating_ip_address": VM_FLOATING_IP,
        "project_id": fixtures["project"]["id"], "description": "the customer's floating IP"}}).json()["floatingip"]
    moved_from = None
    if fip["port_id"] != port["id"]:
        # On another port (a run after a cutover starts the runbook over):
        # the rollback in one PUT, never on no port, which a cut-over
        # binding would hold for 2 minutes as a rollback half done.
        moved_from = fip["port_id"]
        fip = tenant.put("%s/floatingips/%s" % (net, fip["id"]),
                         json={"floatingip": {"port_id": port["id"]}}).json()["floatingip"]
    print(json.dumps({
        "vm_port_id": port["id"], "vm_fixed_ip": VM_FIXED_IP,
        "floating_ip": fip["floating_ip_address"], "floating_ip_id": fip["id"],
        "floating_ip_port_id": fip["port_id"], "moved_from_port_id": moved_from,
        "network_id": fixtures["tenant_net"]["id"], "subnet_id": fixtures["tenant_subnet"]["id"],
        "ext_net_id": fixtures["ext_net"]["id"], "router_id": fixtures["router"]["id"],
    }, indent=2))


def main(argv):
    fixtures, clouds = load()
    net = fixtures["neutron_url"] + "/v2.0"
    tenant = sess(clouds["tenant-a"])
    if argv[:1] == ["vm-up"]:
        vm_up(fixtures, tenant, sess(clouds["admin"]), net)
    elif argv[:1] == ["unset"] and len(argv) == 2:
        fip = fip_by_address(tenant, net, argv[1])
        tenant.put("%s/floatingips/%s" % (net, fip["id"]), json={"floatingip": {"port_id": None}})
    elif argv[:1] == ["set"] and len(argv) == 3:
        fip = fip_by_address(tenant, net, argv[1])
        tenant.put("%s/floatingips/%s" % (net, fip["id"]), json={"floatingip": {"port_id": argv[2]}})
    elif argv[:1] == ["node-pairs"] and len(argv) == 2:
        gw = tenant.get("%s/ports/%s" % (net, argv[1])).json()["port"]
        pair = {"ip_address": gw["fixed_ips"][0]["ip_address"], "mac_address": gw["mac_address"]}
        nodes = [p for p in tenant.get(net + "/ports", params={"network_id": gw["network_id"]}).json()["ports"]
                 if p["name"].startswith("node-")]
        if not nodes:
            sys.exit("no node ports (node-*) on the network: cluster/site/site.sh up makes them")
        for p in nodes:
            pairs = [x for x in p["allowed_address_pairs"] if x != pair] + [pair]
            tenant.put("%s/ports/%s" % (net, p["id"]), json={"port": {"allowed_address_pairs": pairs}})
            print("%s %s: allowed address pair %s %s" % (p["name"], p["id"], pair["ip_address"], pair["mac_address"]))
    elif argv[:1] == ["show"] and len(argv) == 2:
        print(fip_by_address(tenant, net, argv[1])["port_id"] or "unassociated")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
