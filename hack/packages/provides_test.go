package packages

// provides maps every program, file and Python module the host or the
// gateway image needs to the Debian package (bookworm) that ships it: a
// command by its name (looked up in /usr/sbin and /usr/bin), a file by its
// path, a Python module as python3:MODULE. TestProvidesAgreesWithDpkg
// checks each row whose package is installed against dpkg's file lists;
// TestHostPackages fails on a need missing here and on a row nothing needs.
var provides = map[string]string{
	// Essential packages (see essential).
	"base64": "coreutils", "basename": "coreutils", "cat": "coreutils", "chmod": "coreutils",
	"cp": "coreutils", "cut": "coreutils", "date": "coreutils", "dirname": "coreutils",
	"env": "coreutils", "head": "coreutils", "id": "coreutils", "ln": "coreutils", "ls": "coreutils",
	"mkdir": "coreutils", "mktemp": "coreutils", "mv": "coreutils",
	"pwd": "coreutils", "readlink": "coreutils", "rm": "coreutils", "rmdir": "coreutils",
	"seq": "coreutils", "sha256sum": "coreutils", "sleep": "coreutils", "sort": "coreutils", "stat": "coreutils",
	"tail": "coreutils", "touch": "coreutils", "tr": "coreutils",
	"bash": "bash", "sh": "dash", "diff": "diffutils", "find": "findutils", "xargs": "findutils",
	"grep": "grep", "sed": "sed", "tar": "tar", "dpkg-query": "dpkg",
	"flock": "util-linux", "nsenter": "util-linux", "setsid": "util-linux", "unshare": "util-linux",

	// Listed in hack/packages/host.txt.
	"apt-get": "apt", "apt-cache": "apt",
	"make": "make", "git": "git",
	"awk":   "mawk",
	"mount": "mount", "umount": "mount",
	"ps": "procps", "pgrep": "procps", "sysctl": "procps", "kill": "procps",
	"curl":                    "curl",
	"openssl":                 "openssl",
	"ip":                      "iproute2",
	"nft":                     "nftables",
	"conntrack":               "conntrack",
	"runc":                    "runc",
	"/usr/lib/cni/bridge":     "containernetworking-plugins",
	"/usr/lib/cni/host-local": "containernetworking-plugins",
	"/usr/lib/cni/loopback":   "containernetworking-plugins",
	"/usr/lib/cni/macvlan":    "containernetworking-plugins",
	"/usr/lib/cni/static":     "containernetworking-plugins",
	"/usr/lib/ipsec/charon":   "strongswan-charon",
	"/usr/sbin/swanctl":       "strongswan-swanctl",
	"/usr/lib/ipsec/plugins/libstrongswan-vici.so":            "strongswan-swanctl",
	"/usr/lib/ipsec/plugins/libstrongswan-openssl.so":         "libstrongswan-standard-plugins",
	"/usr/lib/ipsec/plugins/libstrongswan-kernel-libipsec.so": "libcharon-extra-plugins",
	"debootstrap": "debootstrap",
	"python3":     "python3", "/usr/bin/python3": "python3",
	"python3:json": "python3", "python3:os": "python3", "python3:sqlite3": "python3",
	"python3:sys": "python3", "python3:time": "python3",
	"python3:yaml":          "python3-yaml",
	"python3:keystoneauth1": "python3-keystoneauth1",
	"python3:sqlalchemy":    "python3-sqlalchemy",
	"python3:neutron":       "python3-neutron",
	"neutron-server":        "neutron-common",
	"neutron-db-manage":     "neutron-common",
	"keystone-manage":       "python3-keystone", "/usr/bin/keystone-wsgi-public": "python3-keystone",
	"uwsgi": "uwsgi-core", "/usr/lib/uwsgi/plugins/python3_plugin.so": "uwsgi-plugin-python3",
}

// madeBy maps the files that a package's maintainer scripts make, so that
// they are in no file list, to that package.
var madeBy = map[string]string{
	"/etc/ssl/certs/ca-certificates.crt": "ca-certificates",
	"/etc/neutron/api-paste.ini":         "neutron-common",
}

// builtinModules are compiled into Debian's python3: no file to find.
var builtinModules = map[string]bool{"python3:sys": true, "python3:time": true}

// essential are the Essential packages the needs come from: every Debian
// system has them, so no list names them.
var essential = []string{"bash", "coreutils", "dash", "diffutils", "dpkg", "findutils", "grep", "sed", "tar", "util-linux"}

// premises are what the set-up starts from, not Debian's: the Go toolchain.
var premises = map[string]bool{"go": true, "gofmt": true}

// imageNeeds are what the gateway pod runs in its image: charon and
// swanctl (cluster/images/gateway/strongswan.conf's plugins among them
// openssl and, for the Libipsec data plane, kernel-libipsec), nft for the
// agent's NAT table, ip for the network init container.
var imageNeeds = map[string]bool{
	"/usr/lib/ipsec/charon": true, "/usr/sbin/swanctl": true, "nft": true, "ip": true, "sh": true,
	"/usr/lib/ipsec/plugins/libstrongswan-vici.so":            true,
	"/usr/lib/ipsec/plugins/libstrongswan-openssl.so":         true,
	"/usr/lib/ipsec/plugins/libstrongswan-kernel-libipsec.so": true,
}

// extraNeed is a need the scan of the scripts cannot see (a plugin, a file
// a program reads, a program Go code runs through a helper), and the file
// whose text shows it: what it mentions.
type extraNeed struct{ what, file, mention string }

var extraNeeds = []extraNeed{
	{"/usr/lib/cni/bridge", "cluster/node/up.sh", "bridge host-local loopback macvlan static"},
	{"/usr/lib/cni/host-local", "cluster/node/up.sh", "bridge host-local loopback macvlan static"},
	{"/usr/lib/cni/loopback", "cluster/node/up.sh", "bridge host-local loopback macvlan static"},
	{"/usr/lib/cni/macvlan", "cluster/node/up.sh", "bridge host-local loopback macvlan static"},
	{"/usr/lib/cni/static", "cluster/node/up.sh", "bridge host-local loopback macvlan static"},
	{"/usr/lib/ipsec/plugins/libstrongswan-openssl.so", "test/topology/charon.go", " openssl "},
	{"/usr/lib/ipsec/plugins/libstrongswan-kernel-libipsec.so", "test/topology/charon.go", " kernel-libipsec "},
	{"/usr/lib/uwsgi/plugins/python3_plugin.so", "cluster/openstack/up.sh", "--plugin python3"},
	{"/usr/bin/keystone-wsgi-public", "cluster/openstack/up.sh", "/usr/bin/keystone-wsgi-public"},
	{"/usr/lib/ipsec/plugins/libstrongswan-vici.so", "test/topology/charon.go", " vici"},
	{"/etc/ssl/certs/ca-certificates.crt", "hack/images.sh", "/etc/ssl/certs/ca-certificates.crt"},
	{"/etc/neutron/api-paste.ini", "cluster/openstack/up.sh", "/etc/neutron/api-paste.ini"},
	{"conntrack", "test/topology/router.go", `n.command("conntrack"`},
	{"mount", "test/topology/charon.go", "mount -t tmpfs"},
}
