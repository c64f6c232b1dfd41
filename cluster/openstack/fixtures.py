#!/usr/bin/python3
"""Creates the test identities and networks in the local Keystone and Neutron.

Run by up.sh with Debian's python3 (it uses keystoneauth1 from the keystone
packages and plain REST calls). Every object is looked up by name first, so a
second run changes nothing but the application credential, which is made
anew because its secret cannot be read back.

Keystone: project "service" with user "neutron" (admin + service roles, used
by Neutron's keystone_authtoken), the network service and its endpoints,
project "tenant-a" with user "tenant-a-user" (member role) and that user's
application credential "tenant-a-appcred".

Neutron: external flat network "ext-net" with subnet "ext-subnet"
(203.0.113.0/24, a documentation range that only lives in Neutron's
database) owned by admin; in tenant-a, network "tenant-net" with subnet
"tenant-subnet" (10.20.0.0/24) and router "tenant-a-router" with its gateway
on ext-net (203.0.113.254, pinned) and an interface on tenant-subnet.

Writes $OS_STATE/clouds.yaml (clouds tenant-a, tenant-a-appcred, admin) and
$OS_STATE/fixtures.json (names and IDs).
"""

import json
import os

import yaml
from keystoneauth1 import session
from keystoneauth1.identity import v3

STATE = os.environ["OS_STATE"]
KEYSTONE = "http://127.0.0.1:%s" % os.environ.get("OS_KEYSTONE_PORT", "5000")
NEUTRON = "http://127.0.0.1:%s" % os.environ.get("OS_NEUTRON_PORT", "9696")
AUTH_URL = KEYSTONE + "/v3"
NET = NEUTRON + "/v2.0"
REGION = "RegionOne"
DOMAIN = "default"

ADMIN_PASSWORD = os.environ["OS_ADMIN_PASSWORD"]
SERVICE_USER = os.environ["OS_NEUTRON_SERVICE_USER"]
SERVICE_PASSWORD = os.environ["OS_NEUTRON_SERVICE_PASSWORD"]

PROJECT = "tenant-a"
USER = "tenant-a-user"
USER_PASSWORD = "tenant-a-password"
APPCRED = "tenant-a-appcred"
APPCRED_SECRET = "tenant-a-appcred-secret"

EXT_CIDR = "203.0.113.0/24"
# ROUTER_EXT_IP is tenant-a-router's address on ext-net, its SNAT address:
# one no test pins as a floating IP.
ROUTER_EXT_IP = "203.0.113.254"
TENANT_CIDR = "10.20.0.0/24"


def password_session(user, password, project):
    auth = v3.Password(auth_url=AUTH_URL, username=user, password=password,
                       user_domain_id=DOMAIN, project_name=project,
                       project_domain_id=DOMAIN)
    return session.Session(auth=auth)


def ensure(sess, base, collection, body, query=None):
    """Returns the object of `collection` named body["name"], creating it."""
    key = collection[:-1]
    params = dict(query or {}, name=body["name"])
    found = sess.get("%s/%s" % (base, collection), params=params).json()[collection]
    if found:
        return found[0]
    return sess.post("%s/%s" % (base, collection), json={key: body}).json()[key]


def keystone(admin):
    roles = {r: ensure(admin, AUTH_URL, "roles", {"name": r})["id"]
             for r in ("admin", "member", "reader", "service")}

    service = ensure(admin, AUTH_URL, "projects",
                     {"name": "service", "domain_id": DOMAIN}, {"domain_id": DOMAIN})
    project = ensure(admin, AUTH_URL, "projects",
                     {"name": PROJECT, "domain_id": DOMAIN,
                      "description": "provider-ipsec integration tests"},
                     {"domain_id": DOMAIN})
    users = {}
    for name, password in ((SERVICE_USER, SERVICE_PASSWORD), (USER, USER_PASSWORD)):
        users[name] = ensure(admin, AUTH_URL, "users",
                             {"name": name, "domain_id": DOMAIN, "password": password},
                             {"domain_id": DOMAIN})
    for proj, user, role in ((service, SERVICE_USER, "admin"),
                             (service, SERVICE_USER, "service"),
                             (project, USER, "member")):
        admin.put("%s/projects/%s/users/%s/roles/%s"
                  % (AUTH_URL, proj["id"], users[user]["id"], roles[role]))

    catalog(admin, "identity", "keystone", AUTH_URL)
    catalog(admin, "network", "neutron", NEUTRON)
    return project, users[USER]


def catalog(admin, kind, name, url):
    """Makes the public, internal and admin endpoints of `kind` point at url."""
    services = admin.get(AUTH_URL + "/services", params={"type": kind}).json()["services"]
    if services:
        svc = services[0]
    else:
        svc = admin.post(AUTH_URL + "/services",
                         json={"service": {"type": kind, "name": name}}).json()["service"]
    have = {e["interface"]: e for e in admin.get(
        AUTH_URL + "/endpoints", params={"service_id": svc["id"]}).json()["endpoints"]}
    for interface in ("public", "internal", "admin"):
        e = have.get(interface)
        if e is None:
            admin.post(AUTH_URL + "/endpoints", json={"endpoint": {
                "service_id": svc["id"], "interface": interface,
                "region_id": REGION, "url": url}})
        elif e["url"] != url or e.get("region_id") != REGION:
            admin.patch("%s/endpoints/%s" % (AUTH_URL, e["id"]),
                        json={"endpoint": {"url": url, "region_id": REGION}})


def application_credential(user_sess):
    uid = user_sess.get_user_id()
    base = "%s/users/%s/application_credentials" % (AUTH_URL, uid)
    for old in user_sess.get(base, params={"name": APPCRED}).json()["application_credentials"]:
        user_sess.delete("%s/%s" % (base, old["id"]))
    return user_sess.post(base, json={"application_credential": {
        "name": APPCRED, "secret": APPCRED_SECRET,
        "description": "provider-ipsec integration tests"}}).json()["application_credential"]


def neutron(admin, tenant):
    ext_net = ensure(admin, NET, "networks", {
        "name": "ext-net", "router:external": True,
        "provider:network_type": "flat", "provider:physical_network": "external"})
    ext_subnet = ensure(admin, NET, "subnets", {
        "name": "ext-subnet", "network_id": ext_net["id"], "ip_version": 4,
        "cidr": EXT_CIDR, "gateway_ip": "203.0.113.1", "enable_dhcp": False})
    net = ensure(tenant, NET, "networks", {"name": "tenant-net"})
    subnet = ensure(tenant, NET, "subnets", {
        "name": "tenant-subnet", "network_id": net["id"], "ip_version": 4,
        "cidr": TENANT_CIDR, "gateway_ip": "10.20.0.1"})
    router = ensure(tenant, NET, "routers", {"name": "tenant-a-router"})
    if not router.get("external_gateway_info"):
        # The router's address on ext-net is pinned (admin-only, hence
        # admin's PUT): left to Neutron it is any free address of
        # ext-subnet, and it took 203.0.113.10, the runbook's floating IP,
        # once (vm-up's create: 409).
        router = admin.put("%s/routers/%s" % (NET, router["id"]), json={"router": {"external_gateway_info": {
            "network_id": ext_net["id"],
            "external_fixed_ips": [{"subnet_id": ext_subnet["id"], "ip_address": ROUTER_EXT_IP}]}}}).json()["router"]
    ports = tenant.get(NET + "/ports", params={
        "device_id": router["id"], "network_id": net["id"]}).json()["ports"]
    if not ports:
        tenant.put("%s/routers/%s/add_router_interface" % (NET, router["id"]),
                   json={"subnet_id": subnet["id"]})
    return ext_net, ext_subnet, net, subnet, router


def write_clouds(appcred):
    def password_cloud(user, password, project):
        return {"auth": {"auth_url": AUTH_URL, "username": user, "password": password,
                         "project_name": project, "user_domain_name": "Default",
                         "project_domain_name": "Default"},
                "region_name": REGION, "identity_api_version": 3, "interface": "public"}
    clouds = {"clouds": {
        "tenant-a": password_cloud(USER, USER_PASSWORD, PROJECT),
        "tenant-a-appcred": {
            "auth_type": "v3applicationcredential",
            "auth": {"auth_url": AUTH_URL, "application_credential_id": appcred["id"],
                     "application_credential_secret": APPCRED_SECRET},
            "region_name": REGION, "identity_api_version": 3, "interface": "public"},
        "admin": password_cloud("admin", ADMIN_PASSWORD, "admin"),
    }}
    write(os.path.join(STATE, "clouds.yaml"),
          yaml.safe_dump(clouds, default_flow_style=False, sort_keys=False))


def write(path, text):
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.rename(tmp, path)


def main():
    admin = password_session("admin", ADMIN_PASSWORD, "admin")
    project, user = keystone(admin)
    tenant = password_session(USER, USER_PASSWORD, PROJECT)
    appcred = application_credential(tenant)
    ext_net, ext_subnet, net, subnet, router = neutron(admin, tenant)

    def ref(obj, **extra):
        return dict({"name": obj["name"], "id": obj["id"]}, **extra)
    fixtures = {
        "auth_url": AUTH_URL,
        "neutron_url": NEUTRON,
        "region": REGION,
        "clouds_yaml": os.path.join(STATE, "clouds.yaml"),
        "project": ref(project),
        "user": ref(user),
        "application_credential": ref(appcred),
        "ext_net": ref(ext_net),
        "ext_subnet": ref(ext_subnet, cidr=ext_subnet["cidr"]),
        "tenant_net": ref(net),
        "tenant_subnet": ref(subnet, cidr=subnet["cidr"]),
        "router": ref(router),
    }
    write_clouds(appcred)
    write(os.path.join(STATE, "fixtures.json"), json.dumps(fixtures, indent=2) + "\n")
    print(json.dumps(fixtures, indent=2))


if __name__ == "__main__":
    main()
